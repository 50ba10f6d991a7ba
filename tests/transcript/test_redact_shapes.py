"""Today's key shapes (learnt from gitleaks' and detect-secrets' rule sets): Stripe, Slack
(app tokens, webhooks), Google (OAuth tokens, client secrets), npm, PyPI, Hugging Face,
SendGrid; the signatures of pre-signed URLs (AWS, GCS, Azure SAS); a kubeconfig's
``client-key-data``; a secret under ``_meta.auth``; a percent-encoded bearer token. And the
prose that looks like one and is none ("Bearer authentication", "sk-learn-compatible").

The fake keys are made here, at run time, from a seeded generator: this file holds nothing a
secret scanner would take for a key."""

from __future__ import annotations

import base64
import random
import string
from typing import Any

import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.wire import WireModel
from acp_proxy.transcript.redact import Redactor

T = "2026-01-01T00:00:00.000000Z"
_RANDOM = random.Random(57)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"


def made(prefix: str, length: int, alphabet: str = ALNUM) -> str:
    """A fake key: ``prefix`` and ``length`` characters drawn from ``alphabet``, with a digit,
    a capital and a small letter among them (as a real key has)."""
    body = [_RANDOM.choice(alphabet) for _ in range(length - 3)]
    body += [_RANDOM.choice(string.digits), _RANDOM.choice(string.ascii_uppercase)]
    body.append(_RANDOM.choice(string.ascii_lowercase))
    _RANDOM.shuffle(body)
    return prefix + "".join(body)


def fake_keys() -> dict[str, str]:
    """One fake key of each shape, its name: each beginning joined from two pieces."""
    return {
        "stripe secret": made("sk" + "_live_", 24),
        "stripe restricted": made("rk" + "_live_", 99),
        "stripe test": made("sk" + "_test_", 24),
        "slack app": "xa"
        + "pp-1-"
        + made("A0", 9, string.ascii_uppercase + string.digits)
        + "-"
        + "".join(_RANDOM.choice(string.digits) for _ in range(13))
        + "-"
        + made("", 64, string.hexdigits.lower()),
        "google oauth": made("ya" + "29.a0", 150, URLSAFE),
        "google client secret": made("GOC" + "SPX-", 28, URLSAFE),
        "npm": made("npm" + "_", 36),
        "pypi": made("pypi" + "-AgEIcHlwaS5vcmc", 120, URLSAFE),
        "hugging face": made("hf" + "_", 34),
        "sendgrid": made("SG" + ".", 22, URLSAFE) + made(".", 43, URLSAFE),
    }


def frame(redactor: Redactor, value: dict[str, Any]) -> bytes:
    """A frame as a redaction stores it."""
    raw = orjson.dumps(value)
    stored, _ = redactor.frame(WireModel().feed("agent", parse_frame(raw), 1, T))
    return stored.raw


def said(text: str) -> dict[str, Any]:
    """An agent's message chunk saying ``text``."""
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": update}}  # fmt: skip


def test_todays_key_shapes_are_hidden_in_text_stderr_fields_and_urls() -> None:
    """Each shape: in a message, in the agent's stderr, as a JSON field's value (whatever its
    name), in a command, after ``=`` and in quotes; the words around it kept."""
    redactor = Redactor()
    for name, key in fake_keys().items():
        for text in (f"your key is {key} ok", f"export TOKEN_X={key}", f'config = "{key}"',
                     f"curl -d 'k={key}' https://x"):  # fmt: skip
            hidden = redactor.string(text)
            assert key not in hidden and "[redacted:" in hidden, (name, text)
            assert hidden.startswith(text[:6]), (name, hidden)
            assert key.encode() not in redactor.text(text.encode()), (name, text)
        stored = frame(redactor, said(f"here: {key}"))
        assert key.encode() not in stored and b"here: [redacted:" in stored, name
        stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"data": key}})
        assert key.encode() not in stored, name


def test_a_slack_webhook_keeps_its_host_and_hides_its_path() -> None:
    redactor = Redactor()
    path = "/".join((made("T", 10, string.ascii_uppercase + string.digits),
                     made("B", 10, string.ascii_uppercase + string.digits), made("", 24)))  # fmt: skip
    url = f"https://hooks.slack.com/services/{path}"
    for text in (f"posting to {url} now", url):
        hidden = redactor.string(text)
        assert path not in hidden and "https://hooks.slack.com/services/[redacted:" in hidden
    stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"url": url}})
    assert path.encode() not in stored, stored


def test_the_signatures_of_pre_signed_urls_are_hidden() -> None:
    """AWS (X-Amz-Signature), GCS (X-Goog-Signature), S3's older Signature, an Azure SAS's
    sig: in a url field, in a message, in stderr; the rest of the URL (where it points, when
    it expires) kept."""
    redactor = Redactor()
    hex_signature = made("", 64, "0123456789abcdef")
    azure_signature = made("", 43, ALNUM + "+/") + "="
    urls = {
        f"https://b.s3.amazonaws.com/k.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260101T000000Z"
        f"&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={hex_signature}": hex_signature,
        f"https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=900"
        f"&X-Goog-Signature={hex_signature[::-1]}": hex_signature[::-1],
        f"https://b.s3.amazonaws.com/k?Expires=1700000000&Signature={azure_signature}": azure_signature,
        f"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2026-01-02T00%3A00%3A00Z"
        f"&sr=b&sp=r&sig={azure_signature.replace('+', '%2B').replace('/', '%2F').replace('=', '%3D')}":
        azure_signature.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
    }  # fmt: skip
    for url, signature in urls.items():
        for hidden in (redactor.url(url), redactor.string(f"fetch {url} then"),
                       redactor.text(f"GET {url} 200".encode()).decode()):  # fmt: skip
            assert signature not in hidden and "redacted-" in hidden, hidden
            assert ("X-Amz-Expires=3600" in hidden) == ("X-Amz-Expires=3600" in url), hidden
            assert ("sp=r&" in hidden) == ("sp=r&" in url), hidden
        stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"uri": url}})
        assert signature.encode() not in stored, url
    for kept in ("see https://example.com/design?sig_version=2 and ?signal=on",
                 "https://x/?designsig=abc"):  # fmt: skip
        assert redactor.string(kept) == kept


def test_a_kubeconfig_client_key_and_a_secret_under_meta_auth_are_hidden() -> None:
    """A kubeconfig read by the agent: its ``client-key-data`` (base64 of a private key) and
    ``token:`` lines; ``_meta.auth`` (a string or an object) but not the protocol's
    ``clientCapabilities.auth`` nor a ``_meta`` opt-in flag."""
    redactor = Redactor()
    pem = ("-----BEGIN RSA " + "PRIVATE KEY-----\n" + made("MIIE", 60, ALNUM + "+/") + "\n"
           "-----END RSA " + "PRIVATE KEY-----\n")  # fmt: skip
    key_data = base64.b64encode(pem.encode()).decode()
    user_token = made("", 40)
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n"
        f"    client-key-data: {key_data}\n"
        "- name: ci\n  user:\n"
        f"    token_file: /var/run/token\n    auth_token: {user_token}\n"
    )
    result = {"content": kubeconfig}
    stored = frame(redactor, {"jsonrpc": "2.0", "id": 3, "result": result})
    assert key_data[:40].encode() not in stored and user_token.encode() not in stored, stored
    assert b"client-key-data: [redacted:" in stored and b"token_file: /var/run/token" in stored
    secret = made("", 32)
    for meta in ({"auth": secret}, {"auth": {"kind": "basic", "value": secret}},
                 {"vendor": {"_auth": secret}}):  # fmt: skip
        params: dict[str, Any] = {"sessionId": "s", "prompt": [], "_meta": meta}
        request = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}
        assert secret.encode() not in frame(redactor, request), meta
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True},
                                                     "_meta": {"terminal-auth": True}}}}  # fmt: skip
    stored = frame(redactor, initialize)
    assert b'"auth":{"terminal":true}' in stored and b'"terminal-auth":true' in stored


def test_a_percent_encoded_bearer_token_is_hidden() -> None:
    redactor = Redactor()
    token = made("", 32, URLSAFE)
    for text in (f"GET /cb?header=Bearer%20{token} HTTP/1.1",
                 f"https://x/?h=Authorization%3A%20Bearer%20{token}&x=1"):  # fmt: skip
        hidden = redactor.string(text)
        assert token not in hidden and "Bearer%20[redacted:" in hidden, hidden
        assert token.encode() not in redactor.text(text.encode())


def test_prose_that_only_looks_like_a_key_is_kept() -> None:
    """What people write about keys is no key: kept as it is, in a message and in stderr."""
    redactor = Redactor()
    for text in (
        "Bearer authentication is described in RFC 6750.",
        "Use Bearer authentication, or Bearer tokens.",
        "Send it as a Bearer token-based header; bearer e.g. a JWT.",
        "The model is sk-learn-compatible and sk-learn-friendly.",
        "the task_live_updates flag, a disk-backed-cache, npm_config_cache, hf_hub_download",
        "SG.stop() then hooks.slack.com is documented",
        "see ya29.html; the signature of foo(a, b) is short",
    ):
        assert redactor.string(text) == text, text
        assert redactor.text(text.encode()) == text.encode(), text
    stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"signature": "def f(a)"}})
    assert b'"signature":"def f(a)"' in stored
