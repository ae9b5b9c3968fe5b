"""How the engine reaches the scheduler: one request, one reply, as JSON.

The engine is Batsim's REQ side. ``SocketTransport`` speaks to any pybatsim
scheduler process over ZeroMQ; ``InProcessTransport`` drives a pybatsim
scheduler object in this process, through pybatsim's own ``Batsim`` class,
so the scheduler sees exactly the same messages (both encode to JSON text).
"""

from contextlib import contextmanager
import json
import time

from batio.errors import SchedulerError


def decode_reply(text):
    """Parse and check the outer shape of a scheduler's reply."""
    try:
        reply = json.loads(text)
    except (json.JSONDecodeError, TypeError) as error:
        raise SchedulerError(f"the scheduler answered with malformed JSON ({error}): {str(text)[:200]!r}") from None
    if not isinstance(reply, dict) or not isinstance(reply.get("events"), list) or \
            not isinstance(reply.get("now"), (int, float)) or isinstance(reply.get("now"), bool):
        raise SchedulerError("the scheduler's reply must be an object with a number 'now' and a list "
                             f"'events', got: {str(text)[:200]!r}")
    return reply


class SocketTransport:
    """ZeroMQ REQ socket connected to a scheduler that has bound its REP socket."""

    def __init__(self, endpoint, timeout_s, scheduler_alive=lambda: True):
        import zmq
        self._zmq = zmq
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
                raise SchedulerError(f"the scheduler did not answer within {self.timeout_s:g} s "
                                     f"(at simulated time {message['now']:.6f}); it may be stalled")
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


class InProcessTransport:
    """Runs a pybatsim scheduler object in this process, without sockets."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self._mailbox = _Mailbox()
        self._batsim = None
        self.seconds_in_scheduler = 0.0

    def request(self, message):
        from batsim.batsim import Batsim
        sent = time.perf_counter()
        self._mailbox.inbox = json.dumps(message)
        try:
            if self._batsim is None:
                # pybatsim's Batsim reads SIMULATION_BEGINS in its constructor.
                with _network_handler_replaced_by(self._mailbox):
                    self._batsim = Batsim(self.scheduler, "inprocess://", 0)
            else:
                self._batsim.do_next_event()
        except Exception as error:
            raise SchedulerError(f"the scheduler crashed: {type(error).__name__}: {error}") from error
        reply, self._mailbox.outbox = self._mailbox.outbox, None
        self.seconds_in_scheduler += time.perf_counter() - sent
        return decode_reply(reply)

    def close(self):
        pass
