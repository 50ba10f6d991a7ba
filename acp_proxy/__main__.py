"""``python -m acp_proxy``."""

from acp_proxy.cli import main

if __name__ == "__main__":
    main()
