"""``[alerts] notify``: pages to ntfy, Slack, e-mail and 100+ services through Apprise.

The same pages as ``[alerts] command``: the level, hold, dedup and rate-limit
semantics are the Notifier's (notifier.py), only the delivery differs. Each
URL is its own Apprise service, so a retry re-sends to the one that failed
and never twice to one that got it. A service that does not answer is tried
``RETRIES`` times with a growing pause, on the notifier's worker thread: the
driver's loop only enqueues, so a receiver that is down delays nothing else,
and the alert is already in the alerts file whatever the delivery does.

Secrets stay out of ``pipeline.toml``: a URL may hold ``${NAME}``, read from
the environment when the driver starts, and ``notify_file`` names a file of
more URLs (one a line, ``#`` comments) that only its owner may read. A
failure report names a URL with Apprise's privacy mode (secrets masked).

The page leads with the cause: the body is the alert's message (for a failed
stage, its fatal line first), the title says where (pipeline, stage and
attempt) and how bad.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3tui.alerts.model import Alert
from eagle3tui.alerts.notifier import Notifier
from eagle3tui.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from eagle3tui.config import AlertsConfig

RETRIES = 3  # deliveries tried per URL and alert
RETRY_PAUSE_S = 0.5  # before the second try; doubled before each next one
_SECRET = re.compile(r"\$\{(\w+)\}")
_TYPES = {"info": "info", "warning": "warning", "critical": "failure"}


def expand_secrets(url: str, env: dict[str, str] | None = None, where: str = "alerts.notify") -> str:
    """``url`` with each ``${NAME}`` replaced by the environment's value (ConfigError if unset)."""
    env = os.environ if env is None else env

    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in env:
            raise ConfigError(f"{where}: ${{{name}}} is not set in the environment",
                              key=where, fix=f"export {name}=... before starting the driver, "
                                             "or put the URL in notify_file")
        return env[name]

    return _SECRET.sub(repl, url)


def read_notify_file(path: Path) -> list[str]:
    """The URLs of ``notify_file``: it must be a regular file of this user, private to it."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the notify file ({e.strerror or e})", path=str(path),
                          key="alerts.notify_file", fix="create it with one Apprise URL per line, chmod 600") from e
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ConfigError(f"{path}: the notify file holds secrets and must be a regular file of yours that "
                          f"only you can read or write (mode {stat.S_IMODE(st.st_mode):o})", path=str(path),
                          key="alerts.notify_file", fix=f"chmod 600 {path}")
    urls = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "://" not in line:
            raise ConfigError(f"{path}:{n}: not an Apprise URL", path=str(path), line=n,
                              key="alerts.notify_file", fix="write one URL a line, e.g. ntfy://ntfy.sh/my-topic")
        urls.append(line)
    return urls


def notify_urls(cfg: AlertsConfig, env: dict[str, str] | None = None) -> list[str]:
    """Every URL to page: ``notify`` (secrets expanded) and ``notify_file``'s."""
    urls = [expand_secrets(u, env) for u in cfg.notify]
    if cfg.notify_file is not None:
        urls += [expand_secrets(u, env, "alerts.notify_file") for u in read_notify_file(cfg.notify_file)]
    return urls


def page_title(alert: Alert, pipeline: str) -> str:
    where = f"{alert.stage}#{alert.attempt}" if alert.stage else "pipeline"
    return f"eagle3tui {pipeline}: {where} {alert.level}"


def page_body(alert: Alert) -> str:
    """The cause first (the alert's message), then what kind of alert it is."""
    more = f" (x{alert.count})" if alert.count > 1 else ""
    return f"{alert.message}{more}\n[{alert.kind}]"


class AppriseNotifier(Notifier):
    """Delivers each page to every Apprise URL, retrying each on its own."""

    target = "alerts.notify"

    def __init__(self, urls: Sequence[str], *, pipeline: str = "pipeline", retries: int = RETRIES,
                 retry_pause_s: float = RETRY_PAUSE_S, **kwargs: Any) -> None:
        import apprise  # 100+ services' plugins: loaded only where notify is set

        self.pipeline = pipeline
        self.retries = max(1, int(retries))
        self.retry_pause_s = float(retry_pause_s)
        self._stopping = threading.Event()
        self.services: list[Any] = []
        bad = []
        for i, url in enumerate(urls):
            svc = apprise.Apprise.instantiate(url)
            if svc is None:
                bad.append(f"URL #{i + 1} ({url.split('://', 1)[0]}://...)")
            else:
                self.services.append(svc)
        if bad:
            raise ConfigError(f"alerts.notify: Apprise knows no service for {', '.join(bad)}",
                              key="alerts.notify",
                              fix="see https://github.com/caronc/apprise/wiki for each service's URL")
        self._apprise = apprise
        super().__init__([f"apprise:{len(self.services)}"], **kwargs)

    @classmethod
    def from_alerts(cls, cfg: AlertsConfig, pipeline: str, report: Callable[[Alert], None] | None = None,
                    env: dict[str, str] | None = None) -> AppriseNotifier:
        """A notifier for ``[alerts] notify`` / ``notify_file`` (ConfigError on a bad URL or file)."""
        return cls(notify_urls(cfg, env), pipeline=pipeline, min_level=cfg.min_level,
                   rate_limit_per_min=cfg.rate_limit_per_min, timeout_s=cfg.timeout_s,
                   hold_s=cfg.hold_fatal_s, log_warnings=cfg.log_warnings, report=report)

    def _run_one(self, alert: Alert) -> None:
        title, body = page_title(alert, self.pipeline), page_body(alert)
        kind = _TYPES.get(alert.level, "info")
        for svc in self.services:
            self._deliver(svc, title, body, kind, alert)

    def _deliver(self, svc: Any, title: str, body: str, kind: str, alert: Alert) -> None:
        pause = self.retry_pause_s
        error = ""
        for attempt in range(1, self.retries + 1):
            try:
                if svc.notify(body=body, title=title, notify_type=self._apprise.NotifyType(kind)):
                    self.sent += 1
                    return
            except Exception as e:  # noqa: BLE001 - a plugin's bug is one failed delivery
                error = f" (last: {type(e).__name__})"
            if attempt < self.retries and self._stopping.wait(pause):
                break  # closing: one try left per page, no more waiting
            pause *= 2
        self.failed += 1
        self._problem("notifier-failed",
                      f"{self.target}: {svc.url(privacy=True)} did not take the page after "
                      f"{self.retries} tries{error}; it is in the alerts file", alert_kind=alert.kind)

    def close(self, wait_s: float | None = None) -> bool:
        # Retries of a receiver that is down must not keep a finishing driver waiting long.
        ok = super().close(wait_s if wait_s is not None else self.timeout_s + 5)
        self._stopping.set()
        return ok
