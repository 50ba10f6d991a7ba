"""The chat's own commands (``/new``, ``/mode``, ``/model``, ``/config``, ``/cancel``,
``/quit``, ``/help``): any other ``/word`` the agent offers is its own, sent as a prompt."""

from __future__ import annotations

from typing import Any

from acp_proxy.core.visible import visible
from acp_proxy.drive.chat.session import Chat
from acp_proxy.live.client import config_option_params

#: The chat's own commands, at its prompt.
HELP = (
    ("/new", "open a new session"),
    ("/mode ID", "set the session's mode (where the agent offers modes)"),
    ("/model ID", "set the session's model (where the agent offers models)"),
    ("/config ID VALUE", "set one of the session's config options"),
    ("/cancel", "send session/cancel (Ctrl-C cancels a running turn)"),
    ("/quit", "end the chat (as Ctrl-D does)"),
    ("/help", "this list"),
)

#: Each command's usage, by its name.
USAGES = {usage.split()[0]: usage for usage, _ in HELP}


class Commands:
    """The chat's commands, run in :attr:`chat`'s session."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def ours(self, line: str) -> bool:
        """Whether ``line`` is one of the chat's commands (piped: any other ``/word`` is
        the agent's)."""
        words = line.split()
        return bool(words) and (words[0] in USAGES or words[0] == "/exit")

    def command(self, line: str) -> bool:
        """A slash command; True to quit."""
        name, *args = line.split()
        if name in ("/quit", "/exit"):
            return True
        if name == "/help":
            self.help()
        elif name == "/new":
            if self.chat.new_session():
                self.chat.say(f"  session {self.chat.session}")
        elif name == "/cancel":  # (at the prompt: a turn runs only until it ends)
            self.chat.say("  no turn to cancel (Ctrl-C cancels a running turn)")
        elif name == "/mode" and len(args) == 1:
            self.set_mode(args[0])
        elif name == "/model" and len(args) == 1:
            self.set_model(args[0])
        elif name == "/config" and len(args) == 2:
            self.set_config(args[0], args[1])
        elif name[1:] in self.agent_commands():
            self.chat.turn(line)  # the agent's own command: a prompt
        elif name in USAGES:  # one of ours, with the wrong arguments
            self.chat.refuse(f"  usage: {USAGES[name]}")
        else:
            self.chat.say(f"  {name}: not a command (/help lists them; /{name} sends it)", False)
        return False

    def help(self) -> None:
        """The commands, and what the session offers (piped: on stderr, not the answer)."""

        def put(text: str) -> None:
            if self.chat.interactive:
                self.chat.write(text)
            else:
                self.chat.say(text.rstrip("\n"))

        for usage, what in HELP:
            put(f"  {usage:<18} {what}\n")
        offered = [
            ("modes", self.modes()),
            ("models", self.models()),
            ("config", [o for o in self.config_options()]),
            ("agent commands", [f"/{c}" for c in self.agent_commands()]),
        ]
        for label, items in offered:
            if items:
                put(visible(f"  {label}: {', '.join(items)}") + "\n")
        put("  //TEXT sends /TEXT as a prompt; a line ending in \\ goes on at the next\n")
        put("  (a paste is one prompt); Ctrl-C cancels a turn; Ctrl-D quits\n")

    def modes(self) -> list[str]:
        modes = self.chat.setup.get("modes")
        available = modes.get("availableModes") if isinstance(modes, dict) else None
        return [str(m.get("id")) for m in available or [] if isinstance(m, dict)]

    def models(self) -> list[str]:
        option = self.config_option_of("model")
        if option is not None:
            values = option.get("options")
            return [str(v.get("value")) for v in values or [] if isinstance(v, dict)]
        models = self.chat.setup.get("models")
        available = models.get("availableModels") if isinstance(models, dict) else None
        return [str(m.get("modelId")) for m in available or [] if isinstance(m, dict)]

    def _options(self) -> list[dict[str, Any]]:
        view = self.chat.stream.model.sessions.get(self.chat.session or "")
        updated = view.settings.get("config") if view is not None else None
        listed = (updated or self.chat.setup).get("configOptions")
        return [o for o in listed if isinstance(o, dict)] if isinstance(listed, list) else []

    def _option_id(self, option: dict[str, Any]) -> str:
        value = option.get("id" if self.chat.protocol == 1 else "configId", option.get("id"))
        return str(value)

    def config_options(self) -> list[str]:
        return [self._option_id(o) for o in self._options()]

    def config_option_of(self, category: str) -> dict[str, Any] | None:
        return next((o for o in self._options() if o.get("category") == category), None)

    def agent_commands(self) -> list[str]:
        view = self.chat.stream.model.sessions.get(self.chat.session or "")
        commands = view.settings.get("commands", {}) if view is not None else {}
        listed = commands.get("availableCommands")
        names = [c.get("name") for c in listed or [] if isinstance(c, dict)]
        return [name for name in names if isinstance(name, str)]

    def set_mode(self, mode: str) -> None:
        modes = self.modes()
        if not modes:
            option = self.config_option_of("mode")
            if option is not None:
                self.set_config(self._option_id(option), mode)
                return
            self.chat.refuse("  the session offers no modes")
            return
        if mode not in modes:
            self.chat.refuse(f"  no mode {mode!r} (the session's: {', '.join(modes)})")
            return
        shown = self._mode_updates()
        params = {"sessionId": self.chat.session, "modeId": mode}
        if self.chat.call("session/set_mode", params) is not None:
            self.chat.settle()  # (the agent's current_mode_update, if it sends one, says it)
            if self._mode_updates() == shown:
                self.chat.say(f"  mode {mode} set")

    def _mode_updates(self) -> int:
        """How many current_mode_updates the session's view has had."""
        view = self.chat.stream.model.sessions.get(self.chat.session or "")
        if view is None:
            return 0
        lists = [view.background_settings, *(t.settings for t in view.turns)]
        return sum(
            1 for changes in lists for _, update in changes
            if update.get("sessionUpdate") == "current_mode_update"
        )  # fmt: skip

    def set_model(self, model: str) -> None:
        option = self.config_option_of("model")
        if option is not None:
            self.set_config(self._option_id(option), model)
            return
        models = self.models()
        if not models:
            self.chat.refuse("  the session offers no models")
            return
        if model not in models:
            self.chat.refuse(f"  no model {model!r} (the session's: {', '.join(models)})")
            return
        params = {"sessionId": self.chat.session, "modelId": model}
        if self.chat.call("session/set_model", params) is not None:
            self.chat.say(f"  model {model} set")

    def set_config(self, config: str, value: str) -> None:
        option = next((o for o in self._options() if self._option_id(o) == config), None)
        if option is None:
            known = ", ".join(self.config_options()) or "none"
            self.chat.refuse(f"  no config option {config!r} (the session's: {known})")
            return
        typed: str | bool = value
        if option.get("type") == "boolean":
            if value not in ("true", "false"):
                self.chat.refuse(f"  {config} takes true or false")
                return
            typed = value == "true"
        params = config_option_params(self.chat.protocol, self.chat.session or "", config, typed)
        if self.chat.call("session/set_config_option", params) is not None:
            self.chat.say(f"  {config} set to {value}")
