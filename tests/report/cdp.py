"""Driving Debian's headless Chromium over the DevTools protocol, standard library only.

Chromium is started with `--remote-debugging-pipe`: it reads protocol messages (JSON, each ended by a NUL byte)
on file descriptor 3 and writes on 4, so no port is opened and no client library is needed. The test and the
report benchmark use it to open a report page, read what the page loaded, time it, click as a user does
(mouse events at an element's position) and take screenshots. Every wait is bounded and named.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
# as the machine's notes give them for headless Chromium as root, plus no network: every request goes to a
# proxy on the discard port, where nothing listens, and no host name resolves
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-color-profile=srgb", "--force-device-scale-factor=1",
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


class ProtocolError(RuntimeError):
    pass


class Chromium:
    """One browser with one page. `open(url)` navigates and waits for the load event."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 900, timeout: float = 30.0):
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_fds():                       # in the child: the pipe ends on fds 3 and 4, inheritable
            reading, writing = os.dup(to_browser_r), os.dup(from_browser_w)   # above 4 (3 and 4 are taken)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire_fds, close_fds=False, env={**os.environ, "LANG": "C.UTF-8"})
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self.events: list[dict] = []
        self._event_arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
        self._reader.start()
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    # -- the protocol ------------------------------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        box = self._replies.get(message["id"])
                    if box is not None:
                        box.put(message)
                else:
                    with self._event_arrived:
                        self.events.append(message)
                        self._event_arrived.notify_all()

    def call(self, method: str, **params) -> dict:
        """Send one command (to the page once attached) and wait for its answer."""
        ident = next(self._ids)
        box: queue.Queue = queue.Queue()
        with self._lock:
            self._replies[ident] = box
        message = {"id": ident, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            reply = box.get(timeout=self.timeout)
        except queue.Empty:
            raise ProtocolError(f"Chromium did not answer {method} within {self.timeout} s") from None
        finally:
            with self._lock:
                self._replies.pop(ident, None)
        if "error" in reply:
            raise ProtocolError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_event(self, method: str, after: int = 0, timeout: float | None = None) -> dict:
        """The first event `method` at index >= `after` of self.events, waiting for it (bounded)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._event_arrived:
            while True:
                for event in self.events[after:]:
                    if event.get("method") == method:
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProtocolError(f"no {method} event within {timeout or self.timeout} s")
                self._event_arrived.wait(left)

    # -- what a test does ----------------------------------------------------------------------------------------

    def open(self, url: str) -> float:
        """Navigate to `url`, wait for its load event; return the seconds from the command to the event."""
        mark = len(self.events)
        started = time.monotonic()
        navigation = self.call("Page.navigate", url=url)
        if navigation.get("errorText"):
            raise ProtocolError(f"{url}: {navigation['errorText']}")
        if navigation.get("loaderId"):            # none when only the fragment changed: no new load
            self.wait_event("Page.loadEventFired", after=mark)
        return time.monotonic() - started

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression[:80]}: {result['exceptionDetails'].get('text')} "
                                f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str, timeout: float = 10.0):
        """Poll a JavaScript expression until it is truthy (bounded); return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise ProtocolError(f"{what}: not within {timeout} s")
            time.sleep(0.05)  # bounded-wait-ok: polling the page's DOM with a deadline

    def click(self, selector: str) -> None:
        """A real mouse click (pressed, released) in the middle of the first element `selector` finds."""
        box = self.js(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: "center", inline: "center"}});
            const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
        if box is None:
            raise ProtocolError(f"nothing matches {selector!r}")
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def requested(self) -> list[str]:
        """Every URL the page asked for so far (Network.requestWillBeSent)."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params = {"format": "png"}
        if full_page:
            width, height = self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (ProtocolError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
