"""A page in headless Chromium, driven over the DevTools protocol.

Used by the report's browser test and by ``scripts/bench_report.py``, to see
a page as a reader does: whether its charts render, what the browser's
console says, what a tooltip holds, how long the first render takes. The
protocol is JSON over a websocket; tornado's client (installed with
dask.distributed) speaks it, so no browser driver (selenium, chromedriver)
is needed: only Debian's ``chromium``.
"""

import asyncio
import base64
import json
import logging
import os
from pathlib import Path
import shutil
import subprocess
import tempfile
import time
import urllib.request

from tornado.websocket import websocket_connect

from batio.errors import EngineError

log = logging.getLogger(__name__)
SNAP_CHROMIUM = "/snap/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--remote-debugging-port=0", "--window-size=1400,1000"]


def chromium():
    """The path of a Chromium that can run here, or None."""
    found = (shutil.which(name) for name in ("chromium", "chromium-browser"))
    return next((path for path in found if path and not _snap_stub(path)), None)


def _snap_stub(path):
    """Whether ``path`` is Ubuntu's launcher of the Chromium snap while the snap
    is absent (always so in a chroot or a container): it only prints advice."""
    with open(path, "rb") as launcher:
        head = launcher.read(4096)
    return SNAP_CHROMIUM.encode() in head and not os.path.exists(SNAP_CHROMIUM)


class Page:
    """One tab of a headless Chromium started for it; use as ``with Page() as page``."""

    def __init__(self, timeout=120.0):
        binary = chromium()
        if binary is None:
            raise EngineError("no Chromium on PATH (Debian: apt-get install chromium)")
        self.timeout = timeout
        self.errors = []  # console errors and uncaught exceptions, as text
        self._profile = tempfile.mkdtemp(prefix="batio-chromium-")
        self._process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._loop = asyncio.new_event_loop()
        self._ids = 0
        self._events = []
        try:
            self._socket = self._loop.run_until_complete(self._connect(self._port()))
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def _port(self):
        """Chromium prints ``DevTools listening on ws://127.0.0.1:PORT/...`` once it listens."""
        assert self._process.stderr is not None
        for line in self._process.stderr:
            if line.startswith("DevTools listening on "):
                return int(line.split(":")[2].split("/")[0])
        raise EngineError(f"Chromium exited (status {self._process.wait()}) before listening for DevTools")

    async def _connect(self, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as answer:
            tabs = [tab for tab in json.load(answer) if tab["type"] == "page"]
        return await websocket_connect(tabs[0]["webSocketDebuggerUrl"], max_message_size=1 << 30)

    async def _call(self, method, params):
        self._ids += 1
        number = self._ids
        await self._socket.write_message(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            text = await asyncio.wait_for(self._socket.read_message(), self.timeout)
            if text is None:
                raise EngineError(f"Chromium closed the connection during {method}")
            message = json.loads(text)
            if message.get("id") == number:
                if "error" in message:
                    raise EngineError(f"{method}: {message['error'].get('message')}")
                return message["result"]
            self._event(message)

    def _event(self, message):
        method, params = message.get("method"), message.get("params", {})
        self._events.append(method)
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            self.errors.append(" ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(params["entry"]["text"])

    def call(self, method, **params):
        """A DevTools command's result; events read meanwhile are recorded."""
        return self._loop.run_until_complete(self._call(method, params))

    def evaluate(self, expression):
        """The value of a JavaScript expression (a promise is awaited)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise EngineError(f"JavaScript error: {result['exceptionDetails'].get('text')} in {expression[:80]}")
        return result["result"].get("value")

    def open(self, path, ready="window.batioRendered"):
        """Load a file; returns the seconds until ``ready`` is truthy (the page's first render)."""
        if not Path(path).is_file():
            raise EngineError(f"{path}: no such page")
        self.call("Page.navigate", url=Path(path).resolve().as_uri())
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(f"document.readyState === 'complete' && !!({ready})"):
            if time.monotonic() > deadline:
                raise EngineError(f"{path}: not rendered after {self.timeout:.0f} s (errors: {self.errors})")
            time.sleep(0.1)
        return self.evaluate(f"({ready}) / 1000")

    def screenshot(self, path, width=1400):
        """A PNG of the whole page."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self):
        if getattr(self, "_socket", None) is not None:
            self._socket.close()
        self._loop.close()
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def render_time(path):
    """Seconds from navigation to the page's first complete render in headless Chromium."""
    with Page() as page:
        seconds = page.open(path)
        if page.errors:
            log.warning("console errors: %s", page.errors)
        return seconds

