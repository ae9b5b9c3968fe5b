"""How the engine reaches the scheduler: one request, one reply, as JSON.

The engine is Batsim's REQ side. ``SocketTransport`` speaks to any pybatsim
scheduler process over ZeroMQ; ``InProcessTransport`` drives a pybatsim
scheduler object in this process, through pybatsim's own ``Batsim`` class,
so the scheduler sees exactly the same messages (both encode to JSON text).
"""

from contextlib import contextmanager, nullcontext
import ctypes
import json
import threading
import time

from batio.errors import BatioError, InvalidConfiguration, SchedulerError
from batio.inputs.workload import json_problem


def timeout_error(timeout_s, now):
    return SchedulerError(f"the scheduler did not answer within {timeout_s:g} s (at simulated time {now:.6f}); "
                          "it may be stalled or looping (raise the bound with --timeout)")


def decode_reply(text):
    """Parse and check the outer shape of a scheduler's reply."""
    try:
        reply = json.loads(text)
    except (ValueError, RecursionError, TypeError) as error:
        raise SchedulerError(f"the scheduler answered with malformed JSON ({json_problem(error)}): "
                             f"{str(text)[:200]!r}") from None
    now = reply.get("now") if isinstance(reply, dict) else None
    if not isinstance(reply, dict) or not isinstance(reply.get("events"), list) or \
            not isinstance(now, (int, float)) or isinstance(now, bool):
        raise SchedulerError("the scheduler's reply must be an object with a number 'now' and a list "
                             f"'events', got: {str(text)[:200]!r}")
    if not 0 <= now < float("inf"):  # NaN too
        raise SchedulerError(f"the scheduler's reply has 'now' {now!r}; simulated time is a finite number >= 0")
    return reply


class SocketTransport:
    """ZeroMQ REQ socket connected to a scheduler that has bound its REP socket."""

    def __init__(self, endpoint, timeout_s, scheduler_alive=lambda: True):
        import zmq
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._scheduler_alive = scheduler_alive
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.REQ)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.connect(endpoint)
        self.seconds_in_scheduler = 0.0

    def request(self, message):
        sent = time.perf_counter()
        self._socket.send_string(json.dumps(message))
        waited = 0.0
        # Poll in short slices so that a scheduler process that died is
        # reported at once rather than after the whole timeout.
        while not self._socket.poll(200):
            waited += 0.2
            if not self._scheduler_alive():
                raise SchedulerError("the scheduler process exited without answering")
            if self.timeout_s and waited >= self.timeout_s:
                raise timeout_error(self.timeout_s, message["now"])
        reply = self._socket.recv_string()
        self.seconds_in_scheduler += time.perf_counter() - sent
        return decode_reply(reply)

    def close(self):
        self._socket.close(linger=0)
        self._context.term()


class _Mailbox:
    """Stands for pybatsim's NetworkHandler: hands one message each way."""

    def __init__(self):
        self.inbox = None
        self.outbox = None

    def bind(self):
        pass

    def recv(self, blocking=False):
        message, self.inbox = self.inbox, None
        assert message is not None  # the scheduler's side receives after a send only
        return json.loads(message)

    def send(self, message):
        self.outbox = json.dumps(message)

    def close(self):
        pass


@contextmanager
def _network_handler_replaced_by(mailbox):
    import batsim.batsim
    original = batsim.batsim.NetworkHandler
    batsim.batsim.NetworkHandler = lambda *args, **kwargs: mailbox
    try:
        yield
    finally:
        batsim.batsim.NetworkHandler = original


class _Interrupted(BaseException):
    """Raised inside a scheduler's callback that ran past the bound (not an
    Exception, so that a scheduler's own ``except Exception`` lets it through)."""


class Watchdog:
    """Bounds the wall-clock time of one in-process decision.

    Past ``timeout_s`` it raises ``_Interrupted`` in the scheduler's thread,
    which ends a callback looping in Python; a callback blocked in C code
    (a long sleep) does not see it, and ``on_stuck`` is called ``grace_s``
    later instead, from the watchdog's thread.
    """

    def __init__(self, timeout_s, on_stuck, grace_s=5.0):
        self.timeout_s = timeout_s
        self.on_stuck = on_stuck
        self.grace_s = grace_s
        self._busy = None  # (thread id, start, simulated now) during a decision
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.fired = False
        self._thread = threading.Thread(target=self._watch, name="batio-watchdog", daemon=True)
        self._thread.start()

    def deciding(self, now):
        with self._lock:
            self.fired = False
            self._busy = (threading.get_ident(), time.monotonic(), now)

    def decided(self):
        with self._lock:
            self._busy = None
            if self.fired:  # the decision ended as it fired: drop the exception if not raised yet
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)

    @contextmanager
    def bounding(self, now, late):
        """The block (a decision, or loading the scheduler) under the bound; past it, ``late`` is raised."""
        self.deciding(now)
        try:
            try:
                yield
            finally:
                self.decided()
        except _Interrupted:
            raise late from None

    def _watch(self):
        while not self._stop.wait(0.1):
            busy = self._busy
            if busy is None:
                continue
            thread, started, now = busy
            late = time.monotonic() - started - self.timeout_s
            with self._lock:
                if late >= 0 and not self.fired and self._busy is busy:
                    self.fired = True
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                                               ctypes.py_object(_Interrupted))
                    continue
            if late >= self.grace_s and self._busy is busy:
                self.on_stuck(timeout_error(self.timeout_s, now))
                return

    def close(self):
        self._stop.set()


class InProcessTransport:
    """Runs a pybatsim scheduler object in this process, without sockets;
    ``watchdog`` (a Watchdog) bounds each decision."""

    def __init__(self, scheduler, watchdog=None):
        self.scheduler = scheduler
        self.watchdog = watchdog
        self._mailbox = _Mailbox()
        self._batsim = None
        self.seconds_in_scheduler = 0.0

    def request(self, message):
        from batsim.batsim import Batsim
        sent = time.perf_counter()
        self._mailbox.inbox = json.dumps(message)
        bounded = (self.watchdog.bounding(message["now"], timeout_error(self.watchdog.timeout_s, message["now"]))
                   if self.watchdog else nullcontext())
        try:
            with bounded:
                if self._batsim is None:
                    # pybatsim's Batsim reads SIMULATION_BEGINS in its constructor.
                    with _network_handler_replaced_by(self._mailbox):
                        self._batsim = Batsim(self.scheduler, "inprocess://", 0)
                else:
                    self._batsim.do_next_event()
        except SchedulerError:  # the bound
            raise
        except SystemExit as error:
            raise SchedulerError(f"the scheduler called sys.exit({error.code!r}) in a callback") from None
        except BatioError as error:
            if message["now"] == 0 and self._batsim is None:  # refused what it was given at SIMULATION_BEGINS
                raise InvalidConfiguration(f"invalid configuration, found before time 0 (nothing ran): "
                                           f"{type(error).__name__}: {error}") from error
            raise SchedulerError(f"the scheduler crashed: {type(error).__name__}: {error}") from error
        except BaseException as error:  # noqa: BLE001 - whatever the scheduler raised is its own failure
            raise SchedulerError(f"the scheduler crashed: {type(error).__name__}: {error}") from error
        reply, self._mailbox.outbox = self._mailbox.outbox, None
        self.seconds_in_scheduler += time.perf_counter() - sent
        return decode_reply(reply)

    def close(self):
        if self.watchdog:
            self.watchdog.close()
