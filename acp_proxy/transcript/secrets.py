"""What is secret: one table, read by every path that hides a secret or keeps one whole.

``redact`` and ``run --redact`` (:mod:`acp_proxy.transcript.redact`: a JSON field, a command
line's flag or ``NAME=value``, a header, a URL's query parameter, the same in text and in
the agent's stderr, a key cut between chunks) and the live stderr cutter
(:mod:`acp_proxy.live.addons`: where a long stderr line may be cut) read it from here.
Every pattern and every hint they test is made from these rows (:func:`key_pattern`,
:func:`pieces`, :data:`BEFORE_SECRET`), so no path knows a word, a key shape or a scheme
that another one misses. Pure data, and the two functions that read a name against it.

The rows:

- :data:`NAME_WORDS`: the words of a name (a field, a flag, an environment variable, a
  query parameter, a header; split at ``_``, ``-`` and case: ``apiKey``, ``DB_PASS``) that
  make its value a secret; :data:`RUN_TOGETHER` and :data:`RUN_TOGETHER_ENDS` the same
  inside one word (``PGPASSWORD``, ``GITHUBTOKEN``); :data:`ABOUT_SECRETS` the last words
  that make a name a fact about a secret, not one (``token_count``);
- :data:`HEADER_WORDS`: words that make a header's name secret and no other name's;
- :data:`QUERY_WORDS`: words that make a URL query parameter's name secret and no other
  name's (a pre-signed URL's signature); :data:`META_NAMES` the names secret under
  ``_meta`` only;
- :data:`TEXT_HEADERS`: the headers whose value is hidden in any text, prose too;
- :data:`AUTH_SCHEMES`: what an authorization's credentials follow;
- :data:`KEY_SHAPES`: API-key shapes, found in any string;
- :data:`SHORT_PASSWORD_FLAGS`: the commands whose short flag takes a password;
- :data:`USER_FLAGS`, :data:`HEADER_FLAGS`: curl's ``-u user:pw`` and ``-H 'Name: X'``;
  :data:`NEXT_WORD_FLAGS` the flags whose next word is a secret.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

__all__ = [
    "ABOUT_SECRETS",
    "AUTH_SCHEMES",
    "BEFORE_SECRET",
    "HEADER_FLAGS",
    "HEADER_WORDS",
    "KEY_SHAPES",
    "META_NAMES",
    "NAME_WORDS",
    "NEXT_WORD_FLAGS",
    "NOT_SECRET",
    "QUERY_WORDS",
    "RUN_TOGETHER",
    "RUN_TOGETHER_ENDS",
    "SHORT_PASSWORD_FLAGS",
    "TEXT_HEADERS",
    "USER_FLAGS",
    "KeyShape",
    "key_pattern",
    "pieces",
    "secret_header",
    "secret_meta",
    "secret_name",
    "secret_query",
]

# --- the table ---------------------------------------------------------------------------

#: The words of a name that make its value a secret (``apiKey``, ``auth_token``,
#: ``DB_PASS``, ``--pw``).
NAME_WORDS = frozenset(
    {"token", "key", "apikey", "secret", "password", "passwd", "passphrase", "pass", "pw",
     "authorization", "credential", "credentials", "cookie", "bearer"}
)  # fmt: skip
#: A word run together from others that holds one of these is secret (``PGPASSWORD``;
#: ``apiKeys``, whose words joined hold ``apikey``) ...
RUN_TOGETHER = ("password", "passwd", "passphrase", "secret", "credential", "authoriz",
                "cookie", "bearer", "apikey")  # fmt: skip
#: ... or one that ends with one of these (``GITHUBTOKEN``, ``PRIVATEKEY``; not
#: ``inputTokens``, ``monkey``).
RUN_TOGETHER_ENDS = ("token", "privatekey", "accesskey", "secretkey", "signingkey",
                     "masterkey", "authkey", "sshkey", "licensekey", "encryptionkey")  # fmt: skip
#: Names that are the protocol's, whatever their words.
NOT_SECRET = frozenset({"sessionId", "toolCallId", "keyId"})
#: A last word that makes a secret-named field a fact about secrets, not one
#: (``token_count``, ``keyName``, ``password_file``, ``tokenType``): its value is searched as
#: any string is, not hidden whole.
ABOUT_SECRETS = frozenset(
    {"count", "counts", "limit", "limits", "usage", "used", "type", "types", "id", "ids",
     "name", "names", "length", "size", "total", "budget", "index", "file", "path", "env",
     "expiry", "expires", "ttl", "hint", "required", "set", "present", "source", "remaining"}
)  # fmt: skip
#: Words that make a header's name secret (``X-Auth``, ``X-Pwd``) and no other name's:
#: ``authMethods`` is the protocol's, ``PWD`` the working directory.
HEADER_WORDS = frozenset({"auth", "pwd"})
#: Words that make a URL query parameter's name secret and no other name's: a pre-signed
#: URL's signature (AWS ``X-Amz-Signature``, GCS ``X-Goog-Signature``, S3's and
#: CloudFront's ``Signature``, an Azure SAS's ``sig``), which stands for its key until the
#: URL expires. A field named ``signature`` elsewhere (a function's) is kept.
QUERY_WORDS = frozenset({"signature", "sig"})
#: Names whose value is secret under ``_meta`` (extension data: ``_meta.auth``) and only
#: there: ``auth`` is also the protocol's capability object (``clientCapabilities.auth``).
META_NAMES = frozenset({"auth"})
#: The headers whose value is hidden wherever ``Name: value`` stands, prose too
#: (``Authorization: Basic X``, ``Cookie: a=b; c=d``); other secret-named headers after
#: ``-H``, and in text that is not prose.
TEXT_HEADERS = ("proxy-authorization", "authorization", "cookie", "x-api-key")
#: The schemes an authorization's credentials follow (``Authorization: Bearer X``).
AUTH_SCHEMES = ("basic", "bearer", "token", "digest", "negotiate")


class KeyShape(NamedTuple):
    """An API key's shape: how it begins and what follows."""

    #: Its beginnings, literal (any one of them).
    starts: tuple[str, ...]
    #: What follows a beginning, as a pattern.
    rest: str
    #: Found wherever it starts (no word ends with its beginning: ``x%3Dsk-ant-…``), or
    #: only from a word's start (``sk-``: not ``disk-…``).
    anywhere: bool
    #: Its shortest example (tests read it; the shortest of all bounds what is searched).
    example: str
    #: Its beginning in any case (``bearer``, ``BEARER``).
    fold: bool = False
    #: Its beginning kept, and what follows hidden (``Bearer X``: a scheme; a webhook's host).
    kept: bool = False
    #: What every key of the shape holds, looked for before the text is searched, where its
    #: beginnings are in any text (a digit): by default its beginnings.
    hint: str = ""

    def pattern(self) -> str:
        """The shape as a pattern: one of its beginnings, then the rest."""
        starts = "|".join(re.escape(start) for start in self.starts)
        return f"(?i:{starts}){self.rest}" if self.fold else f"(?:{starts}){self.rest}"


#: A bearer token's characters (RFC 6750's token68, and ``%`` where a URL encodes it); its
#: last is no ``.`` (a sentence's end).
_TOKEN = r"[A-Za-z0-9._~+/%\-]"
_TOKEN_END = r"[A-Za-z0-9_~+/%\-]=*"
#: What looks made, not written: a digit, a sign, or a capital after a small letter.
_MADE = r"(?:[0-9_~+/%]|[a-z][A-Z])"
#: API-key shaped strings, in any text (in this order: the first that matches is taken).
#: Learnt from gitleaks' and detect-secrets' rules, written anew; each beginning is joined
#: from two pieces so that this file is no key to a scanner.
KEY_SHAPES = (
    KeyShape(("sk-ant-", "sk-proj-"), r"[A-Za-z0-9_\-]{12,}", True, "sk-ant-abcdefghijkl"),
    # (OpenAI's and others' bare sk-: a run of 12 letters and digits, or a digit or a capital
    # in it; not "sk-learn-compatible")
    KeyShape(("sk-",), r"(?=[A-Za-z0-9]{12}|[A-Za-z0-9_\-]*[0-9A-Z])[A-Za-z0-9_\-]{12,}", False,
             "sk-abcdefghijkl"),
    # Stripe's secret and restricted keys (live and test; pk_ is publishable)
    KeyShape(("sk" "_live_", "rk" "_live_", "sk" "_test_", "rk" "_test_", "sk" "_prod_",
              "rk" "_prod_"), r"[A-Za-z0-9]{16,}", False, "sk" "_live_" + "a" * 16),
    # (and a Stripe webhook's signing secret)
    KeyShape(("wh" "sec_",), r"[A-Za-z0-9+/]{24,}=*", True, "wh" "sec_" + "a" * 24),
    KeyShape(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"[A-Za-z0-9]{20,}", True,
             "ghp_abcdefghijklmnopqrst"),
    KeyShape(("github_pat_",), r"[A-Za-z0-9_]{20,}", True, "github_pat_abcdefghijklmnopqrst"),
    KeyShape(("AKIA",), r"[0-9A-Z]{16}(?![A-Za-z0-9_])", True, "AKIAIOSFODNN7EXAMPLE"),
    KeyShape(("AIza",), r"[0-9A-Za-z_\-]{30,}", True, "AIza" + "abcdefghij" * 3),
    # Google's OAuth access tokens and client secrets
    KeyShape(("ya" "29.",), r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{18,}[A-Za-z0-9_\-]", True,
             "ya" "29." + "a" * 20),
    KeyShape(("GOC" "SPX-",), r"[A-Za-z0-9_\-]{20,}", True, "GOC" "SPX-" + "a" * 20),
    KeyShape(("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-", "xoxo-", "xa" "pp-"),
             r"[A-Za-z0-9\-]{10,}", True, "xoxb-0123456789"),
    # (a Slack webhook: its path is the secret; the host is kept)
    KeyShape(("hooks.slack.com/services/", "hooks.slack.com/workflows/",
              "hooks.slack.com/triggers/"), r"[A-Za-z0-9+/_\-]{20,}", True,
             "hooks.slack.com/services/" + "T" * 20, kept=True),
    KeyShape(("eyJ",), r"[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", True,
             "eyJabcdefgh.abcdefgh.abcdefgh"),
    KeyShape(("glpat-",), r"[A-Za-z0-9_\-]{20,}", True, "glpat-abcdefghijklmnopqrst"),
    # Grafana's service account and cloud tokens
    KeyShape(("gl" "sa_",), r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", True,
             "gl" "sa_" + "a" * 32 + "_" + "a" * 8),
    KeyShape(("gl" "c_",), r"[A-Za-z0-9+/]{32,}=*", False, "gl" "c_" + "a" * 32),
    # npm, PyPI (a macaroon: always AgE...), Hugging Face, SendGrid
    KeyShape(("npm" "_",), r"[A-Za-z0-9]{30,}", False, "npm" "_" + "a" * 30),
    KeyShape(("pypi" "-AgE",), r"[A-Za-z0-9_\-]{50,}", True, "pypi" "-AgE" + "a" * 50),
    KeyShape(("hf" "_",), r"[A-Za-z0-9]{30,}", False, "hf" "_" + "a" * 30),
    KeyShape(("SG" ".",), r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,}", False,
             "SG" "." + "a" * 16 + "." + "a" * 30),
    # (32 hex digits after a word, and no more: Databricks, Twilio, Mailgun, Shopify; not
    # "dapi-like", "SKU1234…", "key-value")
    KeyShape(("da" "pi",), r"[a-f0-9]{32}(?:-[0-9]+)?(?![A-Za-z0-9_])", False,
             "da" "pi" + "a" * 32),
    KeyShape(("S" "K",), r"[0-9a-fA-F]{32}(?![A-Za-z0-9_])", False, "S" "K" + "a" * 32),
    KeyShape(("key" "-",), r"[0-9a-f]{32}(?![A-Za-z0-9_])", False, "key" "-" + "a" * 32),
    KeyShape(("shp" "at_", "shp" "ss_", "shp" "ca_", "shp" "pa_"), r"[a-fA-F0-9]{32,}", True,
             "shp" "at_" + "a" * 32),
    # DigitalOcean, Doppler, Atlassian, Linear, Vercel, Supabase, Sentry, Postman, New Relic
    KeyShape(("do" "p_v1_", "do" "o_v1_", "do" "r_v1_"), r"[a-f0-9]{64}", True,
             "do" "p_v1_" + "a" * 64),
    KeyShape(("dp" ".pt.", "dp" ".st.", "dp" ".ct.", "dp" ".sa.", "dp" ".scim.", "dp" ".audit."),
             r"(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,}", False, "dp" ".pt." + "a" * 40),
    KeyShape(("ATA" "TT3",), r"[A-Za-z0-9_\-=]{100,}", True, "ATA" "TT3" + "a" * 100),
    KeyShape(("lin" "_api_",), r"[A-Za-z0-9]{32,}", True, "lin" "_api_" + "a" * 32),
    KeyShape(("vc" "p_", "vc" "i_", "vc" "a_", "vc" "r_", "vc" "k_"), r"[A-Za-z0-9_\-]{40,}",
             False, "vc" "p_" + "a" * 40),
    KeyShape(("sb" "p_",), r"[a-f0-9]{40}", True, "sb" "p_" + "a" * 40),
    KeyShape(("sb" "_secret_",), r"[A-Za-z0-9_\-]{20,}", True, "sb" "_secret_" + "a" * 20),
    KeyShape(("sntr" "ys_", "sntr" "yu_"), r"[A-Za-z0-9+/=_]{40,}", True,
             "sntr" "ys_" + "a" * 40),
    KeyShape(("PM" "AK-",), r"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", True,
             "PM" "AK-" + "a" * 24 + "-" + "a" * 34),
    KeyShape(("NR" "AK-",), r"[A-Z0-9]{27}", True, "NR" "AK-" + "A" * 27),
    # A Discord bot token: a user id's base64 (an id's first digit: MT... for 1, OT... for
    # 9), a dot, 6, a dot, 27 or more
    KeyShape(("M" "T", "M" "j", "M" "z", "N" "D", "N" "T", "N" "j", "N" "z", "O" "D", "O" "T"),
             r"[A-Za-z0-9_\-]{21,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}", False,
             "M" "T" + "a" * 21 + "." + "a" * 6 + "." + "a" * 27),
    # A Telegram bot token: the bot's id, a colon, AA and 31 or more (in a URL: /bot<id>:AA...)
    KeyShape(tuple("123456789"), r"[0-9]{5,11}:AA[A-Za-z0-9_\-]{31,}", True,
             "1" + "2" * 5 + ":AA" + "a" * 31, hint=":AA"),
    # (``bearer`` in any case, then a space or a URL's %20: a token that looks made, or a long
    # one; not prose: "Bearer authentication", "the bearer of bad news")
    KeyShape(("bearer",), rf"(?:[ \t]+|%20)(?:(?={_TOKEN}*{_MADE}){_TOKEN}{{7,}}{_TOKEN_END}"
             rf"|[A-Za-z0-9_~+/]{{16,}}=*)", False, "bearer abcdefg1", fold=True, kept=True),
)  # fmt: skip

#: The commands whose short flag takes a password, and how: ``mysql -pSECRET`` (attached
#: only: ``-p`` alone asks for one), ``sshpass -p SECRET`` or ``-pSECRET``, ``redis-cli -a
#: SECRET``.
SHORT_PASSWORD_FLAGS: dict[str, tuple[str, bool, bool]] = {
    # command: (flag, its value may be attached, may be the next argument)
    "mysql": ("-p", True, False),
    "mysqldump": ("-p", True, False),
    "mysqladmin": ("-p", True, False),
    "mysqlimport": ("-p", True, False),
    "mariadb": ("-p", True, False),
    "mariadb-dump": ("-p", True, False),
    "sshpass": ("-p", True, True),
    "redis-cli": ("-a", True, True),
}
#: curl's flags whose value holds a password (``-u user:pw``) and a header (``-H 'X-Auth:
#: X'``), as one argument, or the next.
USER_FLAGS = ("-u", "--user")
HEADER_FLAGS = ("-H", "--header")
#: The flags whose next word (in text: after a space) is a secret or holds one: those, and
#: the short password flags that take the next argument (:data:`SHORT_PASSWORD_FLAGS`).
NEXT_WORD_FLAGS = (
    *USER_FLAGS,
    *HEADER_FLAGS,
    *sorted({flag for flag, _, separate in SHORT_PASSWORD_FLAGS.values() if separate}),
)

# --- what is derived from it ---------------------------------------------------------------


def pieces(words: Iterable[str], fold: bool = True) -> tuple[str, ...]:
    """The fewest pieces (lowercased, with ``fold``) one of which every word holds: a text
    that holds none of them holds none of the words."""
    every = {word.lower() if fold else word for word in words}
    return tuple(sorted(w for w in every if not any(o != w and o in w for o in every)))


def key_pattern() -> str:
    """:data:`KEY_SHAPES` as one pattern, in their order: their beginnings as a tree of
    characters (a branch per first character, each opening with it alone: in both cases where
    the shape's beginning is of any case), so that the regex engine skips to where one of those
    characters stands and, there, tries only the shapes that begin with it (branches that open
    with a group are tried at every position: twice as slow over text)."""
    branches = []
    for shape in KEY_SHAPES:
        for start in shape.starts:
            if shape.fold:  # (its first character in each case, the rest in any)
                tail = f"(?i:{re.escape(start[1:])})(?:{shape.rest})"
                heads = dict.fromkeys((start[0].lower(), start[0].upper()))
                branches += [(head, tail) for head in heads]
            else:
                branches.append((start, f"(?:{shape.rest})"))
    return _tree(branches)


def _tree(branches: list[tuple[str, str]]) -> str:
    """Branches (a literal beginning, then a pattern) as one alternation, in their order, the
    beginnings that share a first character under it. Only branches whose beginnings differ
    in their first character change places, and no two such match at the same position; one
    whose beginning is spent (the rest is its pattern) keeps its place among the others."""
    out: list[str] = []
    at = 0
    while at < len(branches):
        literal, rest = branches[at]
        if not literal:
            out.append(rest)
            at += 1
            continue
        end = at
        while end < len(branches) and branches[end][0]:
            end += 1
        groups: dict[str, list[tuple[str, str]]] = {}
        for literal, rest in branches[at:end]:
            groups.setdefault(literal[0], []).append((literal[1:], rest))
        for first, under in groups.items():
            shared = _shared([literal for literal, _ in under])
            if len(under) == 1:
                out.append(re.escape(first + shared) + under[0][1])
            else:
                rests = [(literal[len(shared) :], rest) for literal, rest in under]
                out.append(f"{re.escape(first + shared)}(?:{_tree(rests)})")
        at = end
    return "|".join(out)


def _shared(words: list[str]) -> str:
    """What the words all begin with."""
    shared = words[0]
    for word in words[1:]:
        while not word.startswith(shared):
            shared = shared[:-1]
    return shared


#: Where a long stderr line is not cut, after these and a space (lowercase, at most 9
#: bytes: the cutter looks that far back): what a secret follows in text that is not JSON
#: (``token: X``, ``TOKEN = X``, ``Cookie: a=b; c=d``, ``Authorization: Bearer X``,
#: ``-u user:pw``, ``-H 'X-Auth: X'``, ``sshpass -p X``, and such a command before its
#: flag), or the next piece would hold the secret alone, unrecognised.
BEFORE_SECRET: tuple[bytes, ...] = tuple(
    word.lower().encode()
    for word in (
        *(":", "=", ";"),
        *AUTH_SCHEMES,
        *NEXT_WORD_FLAGS,
        *sorted(
            command for command, (_, _, next_word) in SHORT_PASSWORD_FLAGS.items() if next_word
        ),
    )
)

_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_RUN_TOGETHER = re.compile("|".join(RUN_TOGETHER))


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a name looks like it holds a secret: a field, a flag (``--api-key``), an
    environment variable, a query parameter, ``name: value`` in text (names repeat:
    remembered)."""
    if not name or name in NOT_SECRET:
        return False
    words = _WORDS.findall(name.replace("-", "_"))
    if len(words) > 1 and words[-1].lower() in ABOUT_SECRETS:
        return False
    lowered = {w.lower() for w in words}
    if lowered & NAME_WORDS or name.lower() in NAME_WORDS:
        return True
    return any(_run_together(word) for word in (*words, "".join(words)))


def secret_header(name: str) -> bool:
    """Whether a header's name looks secret: as :func:`secret_name`, and ``X-Auth`` too
    (:data:`HEADER_WORDS`)."""
    words = name.lower().replace("_", "-").split("-")
    return secret_name(name) or any(word in HEADER_WORDS for word in words)


def secret_query(name: str) -> bool:
    """Whether a URL query parameter's name looks secret: as :func:`secret_name`, and a
    signature too (:data:`QUERY_WORDS`: ``X-Amz-Signature``, ``sig``)."""
    words = re.split(r"[-_.]", name.lower())
    return secret_name(name) or words[-1] in QUERY_WORDS


def secret_meta(name: str) -> bool:
    """Whether a name under ``_meta`` looks secret: as :func:`secret_name`, and
    :data:`META_NAMES` (``auth``, ``_auth``) too."""
    return secret_name(name) or name.strip("_").lower() in META_NAMES


def _run_together(word: str) -> bool:
    """``PGPASSWORD``, ``GITHUBTOKEN``, ``PRIVATEKEY``: one word made of several."""
    lower = word.lower()
    if _RUN_TOGETHER.search(lower) is not None or lower.endswith(RUN_TOGETHER_ENDS):
        return True
    return len(word) > 3 and word.isupper() and word.endswith("KEY")  # OPENAIKEY
