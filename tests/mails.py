"""What every e-mail the site sends must hold: links a mail reader can open, i.e. absolute http(s) URLs, in the body
(plain and HTML parts) and in List-Unsubscribe. tests/conftest.py checks each test's outbox with it. And a mail server
that the tests of retried mail can stop and start (SmtpServer)."""

from __future__ import annotations

import re
import socketserver
import threading

# A path standing alone, not inside a URL (after a letter, ':', '/', '.') or a closing tag ('<'): "/submissions/14/".
BARE_PATH = re.compile(r"(?<![\w:/.<])/[\w\-./%?=&~:+@]+")
HREF = re.compile(r"""\b(?:href|src)\s*=\s*["']?([^"'\s>]*)""", re.IGNORECASE)
ABSOLUTE = re.compile(r"https?://[^/\s\"'<>]+")


def link_problems(message) -> list[str]:
    """Each link in `message` (a django.core.mail message) that is not an absolute http(s) URL, described."""
    parts = [message.body] + [content for content, kind in getattr(message, "alternatives", ()) if kind == "text/html"]
    problems = [f"{message.subject!r}: bare path {path!r}" for part in parts for path in BARE_PATH.findall(part)]
    problems += [f"{message.subject!r}: href {h!r}" for part in parts for h in HREF.findall(part) if not ABSOLUTE.match(h)]
    unsubscribe = message.extra_headers.get("List-Unsubscribe")
    if unsubscribe is not None and not re.fullmatch(rf"<{ABSOLUTE.pattern}/\S*>", unsubscribe):
        problems.append(f"{message.subject!r}: List-Unsubscribe {unsubscribe!r}")
    return problems


class SmtpServer(socketserver.ThreadingTCPServer):
    """A real SMTP server on 127.0.0.1 (the standard library has none since 3.12, and aiosmtpd is not installed): it
    refuses the first `refuse` connections with 421, as a server down for maintenance does, and takes every message
    of the rest. `connections` counts who called; `received` holds each message's recipients, in order."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, refuse: int = 0) -> None:
        super().__init__(("127.0.0.1", 0), _SmtpSession)
        self.refuse, self.connections, self.received = refuse, 0, []
        threading.Thread(target=self.serve_forever, name="smtp-server", daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _SmtpSession(socketserver.StreamRequestHandler):
    """One connection: the few commands smtplib sends, each answered as RFC 5321 says; DATA is read to its end."""

    def reply(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        server: SmtpServer = self.server
        server.connections += 1
        if server.connections <= server.refuse:
            return self.reply("421 mail.test Service not available, closing transmission channel")
        self.reply("220 mail.test ESMTP")
        recipients: list[str] = []
        for raw in self.rfile:
            command = raw.decode("ascii", "replace").strip()
            verb = command[:4].upper()
            if verb == "QUIT":
                return self.reply("221 Bye")
            if verb == "RCPT":
                recipients.append(command.partition(":")[2].strip(" <>"))
            if verb == "DATA":
                self.reply("354 End data with <CR><LF>.<CR><LF>")
                while self.rfile.readline() not in (b".\r\n", b""):
                    pass
                server.received.append(recipients)
                recipients = []
            self.reply("250 OK" if verb in ("EHLO", "HELO", "MAIL", "RCPT", "DATA", "RSET", "NOOP") else "502 Command not implemented")
