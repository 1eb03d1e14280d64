"""`amqp-conformance observe`: a transparent recording proxy for real applications, judging both endpoints live.

This module owns the proxy's I/O and the judging process behind it. The proxy forwards bytes verbatim in
one thread of non-blocking sockets (selectors): nothing is decoded on the forwarding path, so SASL and
everything else passes through unchanged and the traffic is slowed only by a copy. Every chunk read is
also handed, with its connection, side and time, to a second process (a pipe fed by a writer thread, so a
judge that falls behind costs memory, never forwarding speed) that runs `judge.ConnectionJudge` per
connection, prints each finding as it is found, keeps each connection's transcript (the suite's format,
`peer.transcript.Transcript`: SASL responses redacted) and, when the proxy stops (Ctrl-C or SIGTERM,
--duration, --connections N ended), writes the traffic run directory (`check.write_run`) with transcripts/.

Stopping: SIGINT and SIGTERM set the proxy's stop flag (it ends within one select timeout), also when the
process was started with SIGINT ignored, as POSIX shells start a script's background jobs (`observe ... &`
then `kill -INT`), like tcpdump. The proxy then waits for the judging process, saying so while it waits; a
judging process that dies, or does not finish in `JUDGE_TIMEOUT`, is one error line (exit 14); a second
signal while waiting abandons the judging (exit 130).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import queue
import selectors
import shutil
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from ..errors import EXIT_INTERRUPTED, BrokerUnreachable, PortInUse, RunBroken, UsageError
from ..options import RunOptions
from ..peer.transcript import Transcript
from ..peer.url import parse_url
from .check import CheckResult, new_run_id, run_paths, sort_out, summary_lines, write_run
from .judge import CLIENT, SERVER, ConnectionJudge

_MSG = struct.Struct(">IBd")          # connection id, kind, time; then the data
DATA_CLIENT, DATA_SERVER, OPENED, ENDED, STOP = 0, 1, 2, 3, 4
_CHUNK = 256 * 1024
_HIGH_WATER = 4 << 20                 # bytes waiting for one socket before we stop reading its partner
JUDGE_TIMEOUT = 600.0                 # seconds the stopped proxy waits for the judging process to write the run


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise UsageError(f"bad --listen {text!r}; expected HOST:PORT, e.g. 127.0.0.1:5673")
    return host.strip("[]"), int(port)


class _Pair:
    __slots__ = ("cid", "client", "server", "pending", "closed_read", "shut", "paused", "how")

    def __init__(self, cid: int, client: socket.socket, server: socket.socket):
        self.cid = cid
        self.client, self.server = client, server
        self.pending = {client: bytearray(), server: bytearray()}   # bytes waiting to be written to the socket
        self.closed_read: set = set()
        self.shut: set = set()
        self.paused: set = set()
        self.how: dict = {}              # socket -> how its stream ended: "fin", "reset" (a socket error)

    def other(self, sock):
        return self.server if sock is self.client else self.client


class ObserveProxy:
    """Listens on (host, port); each accepted connection is paired with one to the upstream broker."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], sink=None, *,
                 connect_timeout: float | None = None):
        self.listen_addr, self.upstream = listen, upstream
        self.sink = sink                      # sink(cid, kind, t, data) or None
        self.connect_timeout = RunOptions().connect_timeout if connect_timeout is None else connect_timeout
        self.sel = selectors.DefaultSelector()
        self.pairs: dict[int, _Pair] = {}
        self.accepted = 0
        self.ended = 0
        self.bytes = 0
        self._stop = False
        self.upstream_lost: str | None = None    # why the upstream broker stopped taking connections
        try:
            self.listener = socket.create_server(listen, reuse_port=False)
        except OSError as exc:
            raise PortInUse(f"cannot listen on {listen[0]}:{listen[1]} ({exc.strerror}); choose another --listen "
                            "port") from None
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.sel.register(self.listener, selectors.EVENT_READ, None)

    def stop(self) -> None:
        self._stop = True

    def serve(self, duration: float | None = None, connections: int | None = None) -> None:
        deadline = None if duration is None else time.monotonic() + duration
        while not self._stop:
            if connections is not None and self.ended >= connections:
                break
            timeout = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
            if deadline is not None and time.monotonic() >= deadline:
                break
            for key, mask in self.sel.select(timeout):
                if key.data is None:
                    self._accept()
                    continue
                pair, sock = key.data, key.fileobj
                if mask & selectors.EVENT_WRITE:
                    self._flush(pair, sock)
                if mask & selectors.EVENT_READ and pair.cid in self.pairs:
                    self._read(pair, sock)
        self.close()

    def close(self) -> None:
        for pair in list(self.pairs.values()):
            self._end(pair)
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()

    def _accept(self) -> None:
        try:
            client, _addr = self.listener.accept()
        except BlockingIOError:
            return
        try:
            server = socket.create_connection(self.upstream, timeout=self.connect_timeout)
        except OSError as exc:
            client.close()               # the application sees the broker refuse, as it would directly
            # as at start-up: observing a broker that is gone would only record refusals; stop and say so
            self.upstream_lost = (f"{exc.strerror or exc} at {time.strftime('%H:%M:%S')}, after "
                                  f"{self.accepted} connection(s)")
            self._stop = True
            return
        for s in (client, server):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.accepted += 1
        pair = _Pair(self.accepted, client, server)
        self.pairs[pair.cid] = pair
        self._events(pair, client)
        self._events(pair, server)
        if self.sink:
            peer = "%s:%s" % client.getpeername()[:2]
            up = "%s:%s" % server.getpeername()[:2]
            self.sink(pair.cid, OPENED, time.time(), f"{peer}\n{up}".encode())

    def _events(self, pair: _Pair, sock) -> None:
        mask = 0
        if sock not in pair.closed_read and sock not in pair.paused:
            mask |= selectors.EVENT_READ
        if pair.pending[sock]:
            mask |= selectors.EVENT_WRITE
        try:
            if mask:
                try:
                    self.sel.modify(sock, mask, pair)
                except KeyError:
                    self.sel.register(sock, mask, pair)
            else:
                self.sel.unregister(sock)
        except (KeyError, ValueError):
            pass

    def _read(self, pair: _Pair, sock) -> None:
        try:
            data = sock.recv(_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            data = b""
            pair.how.setdefault(sock, "reset" if isinstance(exc, ConnectionResetError) else "socket-error")
        dest = pair.other(sock)
        if not data:
            pair.how.setdefault(sock, "fin")
            pair.closed_read.add(sock)
            if not pair.pending[dest]:
                self._shutdown(pair, dest)
            self._events(pair, sock)
            if len(pair.closed_read) == 2 and not any(pair.pending.values()):
                self._end(pair)
            return
        self.bytes += len(data)
        if self.sink:
            self.sink(pair.cid, DATA_CLIENT if sock is pair.client else DATA_SERVER, time.time(), data)
        buf = pair.pending[dest]
        if not buf:
            try:
                sent = dest.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._end(pair)
                return
            if sent < len(data):
                buf += data[sent:]
        else:
            buf += data
        if len(buf) > _HIGH_WATER:
            pair.paused.add(sock)
        self._events(pair, dest)
        self._events(pair, sock)

    def _flush(self, pair: _Pair, sock) -> None:
        buf = pair.pending[sock]
        if buf:
            try:
                sent = sock.send(buf)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._end(pair)
                return
            del buf[:sent]
        source = pair.other(sock)
        if len(buf) <= _HIGH_WATER // 2:
            pair.paused.discard(source)
        if not buf and source in pair.closed_read:
            self._shutdown(pair, sock)
        if len(pair.closed_read) == 2 and not any(pair.pending.values()):
            self._end(pair)
            return
        self._events(pair, sock)
        self._events(pair, source)

    def _shutdown(self, pair: _Pair, sock) -> None:
        if sock not in pair.shut:
            pair.shut.add(sock)
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _end(self, pair: _Pair) -> None:
        if self.pairs.pop(pair.cid, None) is None:
            return
        for s in (pair.client, pair.server):
            try:
                self.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()
        self.ended += 1
        if self.sink:
            how = [[CLIENT if sock is pair.client else SERVER, way] for sock, way in pair.how.items()]
            self.sink(pair.cid, ENDED, time.time(), json.dumps(how).encode())     # in the order they ended


# -- the judging process ----------------------------------------------------------------------------------

class PipeSink:
    """The proxy's side of the pipe: a queue drained by a writer thread (forwarding never waits for it)."""

    def __init__(self, conn):
        self.conn = conn
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="observe-sink", daemon=True)
        self.thread.start()

    def __call__(self, cid: int, kind: int, t: float, data: bytes) -> None:
        self.q.put(_MSG.pack(cid, kind, t) + data)

    def _run(self) -> None:
        send = self.conn.send_bytes
        while True:
            msg = self.q.get()
            if msg is None:
                return
            try:
                send(msg)
            except OSError:         # the judging process is gone: the proxy says so when it stops
                return

    def close(self) -> None:
        """Queue STOP behind everything observed; the writer thread hands it over and ends."""
        self.q.put(_MSG.pack(0, STOP, time.time()))
        self.q.put(None)

    def backlog(self) -> int:
        """Messages not yet handed to the judging process."""
        return self.q.qsize()


class Observer:
    """The judging side (sans-IO apart from printing and the run directory): messages in, findings out."""

    def __init__(self, say=print):
        self.say = say
        self.judges: dict[int, ConnectionJudge] = {}
        self.transcripts: dict[int, Transcript] = {}
        self.done: list[ConnectionJudge] = []

    def handle(self, msg: bytes) -> bool:
        cid, kind, t = _MSG.unpack_from(msg)
        data = msg[_MSG.size:]
        if kind == STOP:
            return False
        if kind == OPENED:
            client, server = data.decode().split("\n")
            judge = ConnectionJudge(f"#{cid} {client}->{server}", client=client, server=server, sides_captured=True)
            tr = Transcript(label=f"observe-{cid}")
            judge.on_items = lambda side, items, tr=tr: tr.add_items("out" if side == CLIENT else "in", items)
            self.judges[cid], self.transcripts[cid] = judge, tr
            return True
        judge = self.judges.get(cid)
        if judge is None:
            return True
        if kind == ENDED:
            self.done.append(judge)
            for finding in judge.finish():       # what was held is judged first: its close frames count
                self.say(finding.line())
            judge.ended(json.loads(data) if data else [])
            return True
        for finding in judge.feed(CLIENT if kind == DATA_CLIENT else SERVER, data, t):
            self.say(finding.line())
        return True

    def result(self) -> CheckResult:
        """Every connection finished; the AMQP ones judged, a `skipped` line for each other one (the lines are
        said here, as `check` says them)."""
        for judge in self.judges.values():
            for finding in judge.finish():
                self.say(finding.line())
        result = CheckResult(inputs=[])
        sort_out(list(self.judges.values()), result)
        for line in result.notes():
            self.say(line)
        return result


class _Say:
    """print() for the judging process: a reader of its output that went away (a closed pipe, the proxy
    SIGKILLed with its terminal) costs the lines, never a traceback: the run directory is written all the same."""

    def __init__(self):
        self.gone = False

    def __call__(self, line: str) -> None:
        if self.gone:
            return
        try:
            print(line, flush=True)
        except (BrokenPipeError, OSError, ValueError):
            self.gone = True
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _judge_process(conn, reports_dir: str, meta: dict, result_conn, parent_ends=(), run_id: str | None = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # the proxy process stops us with STOP
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for end in parent_ends:     # the proxy's ends, copied by fork: closed, so a proxy that dies means EOF here
        end.close()
    say = _Say()
    obs = Observer(say)
    while True:
        try:
            msg = conn.recv_bytes()
        except EOFError:        # the proxy is gone (killed): what it forwarded is judged and written all the same
            break
        if not obs.handle(msg):
            break
    result = obs.result()
    judged = {id(c) for c in result.connections}

    def transcripts(path: Path) -> None:
        (path / "transcripts").mkdir(exist_ok=True)
        for cid, tr in obs.transcripts.items():
            if id(obs.judges[cid]) in judged:
                (path / "transcripts" / f"connection-{cid}.json").write_text(json.dumps(tr.to_json()), "utf-8")

    path = write_run(Path(reports_dir), result, command="observe", extra=meta, run_id=run_id, more=transcripts)
    for line in summary_lines(result):
        say(line)
    frames = sum(c.frames for c in result.connections)
    say(f"{len(result.connections)} connection(s) observed, {frames} frames judged, "
        f"{len(result.findings)} finding(s); results in {path}")
    with contextlib.suppress(OSError):
        result_conn.send((result.exit_code(), str(path), run_id))


def start_judge(reports_dir: Path, meta: dict, run_id: str | None = None):
    ctx = multiprocessing.get_context("fork")
    recv_end, send_end = ctx.Pipe(duplex=False)
    res_recv, res_send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_judge_process, args=(recv_end, str(reports_dir), meta, res_send,
                                                    (send_end, res_recv), run_id), daemon=True)
    proc.start()
    recv_end.close()
    res_send.close()
    return proc, PipeSink(send_end), res_recv


def cmd_observe(args) -> int:
    from ..options import default_reports_dir
    listen = parse_listen(args.listen)
    up = parse_url(args.upstream)
    if up.tls:
        raise UsageError("observe cannot judge TLS: give the broker's plain amqp:// port as --upstream")
    if args.duration is not None and not args.duration > 0:
        raise UsageError("--duration must be a positive number of seconds")
    if args.connections is not None and args.connections < 1:
        raise UsageError("--connections must be at least 1")
    try:
        socket.create_connection((up.host, up.port), timeout=RunOptions().connect_timeout).close()
    except OSError as exc:
        raise BrokerUnreachable(f"cannot reach the upstream broker {up.redacted()} ({exc.strerror or exc}); "
                                "start it or fix --upstream") from None
    reports = Path(args.reports_dir) if args.reports_dir else default_reports_dir()
    proxy = ObserveProxy(listen, (up.host, up.port))
    meta = {"listen": f"{listen[0]}:{proxy.port}", "upstream": up.redacted()}
    run_id = new_run_id()
    proc, sink, results = start_judge(reports, meta, run_id)
    proxy.sink = sink
    stop = lambda _signum, _frame: proxy.stop()        # noqa: E731 -- a flag the proxy's loop reads
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    print(f"observing: applications connect to amqp://{listen[0]}:{proxy.port}, forwarded to {up.redacted()}; "
          "Ctrl-C stops", flush=True)
    try:
        proxy.serve(args.duration, args.connections)
    finally:
        proxy.close()
        sink.close()
    try:
        code = _wait_for_judge(proc, sink, results, run_paths(reports, run_id))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if proxy.upstream_lost is not None and code != EXIT_INTERRUPTED:
        # what was observed is written; then the same one line and exit code as a broker unreachable at start-up
        raise BrokerUnreachable(f"the upstream broker {up.redacted()} stopped taking connections "
                                f"({proxy.upstream_lost}); observing stopped, what was observed until then is in "
                                f"{run_paths(reports, run_id)[0]}; start the broker and observe again")
    return code


def _died(proc, paths) -> str:
    code = proc.exitcode
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"ended (exit code {code})"
    return f"the judging process {how} before it said it was done; {_left(paths)}; its own error, if any, is above"


def _left(paths) -> str:
    """After the judging process was stopped or died: the run directory is whole (renamed into place) or not
    there at all (its partial directory removed here), and the line says which."""
    final, partial = paths
    shutil.rmtree(partial, ignore_errors=True)
    if final.exists():
        return f"the run directory was written whole: {final}"
    return "no run directory was written (nothing is left of it)"


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


def _wait_for_judge(proc, sink, results, paths, timeout: float | None = None) -> int:
    """The proxy has stopped: wait (bounded, saying so every 5 s) for the judging process's exit code.
    `paths`: the run directory and its partial one (`check.run_paths`)."""
    from multiprocessing.connection import wait
    timeout = JUDGE_TIMEOUT if timeout is None else timeout
    for sig in (signal.SIGINT, signal.SIGTERM):        # a second signal abandons the judging
        signal.signal(sig, _interrupt)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                proc.join(5)
                raise RunBroken(f"the judging process did not finish within {timeout:.0f} s of the stop "
                                f"({_left(paths)}); observe fewer connections at once or use --duration")
            ready = wait([results, proc.sentinel], min(5.0, left))
            if results in ready:
                try:
                    code, _path, _ = results.recv()
                except EOFError:            # it ended without sending: its error, if any, is above
                    proc.join(5)
                    raise RunBroken(_died(proc, paths)) from None
                proc.join(30)
                return code
            if proc.sentinel in ready and not results.poll():
                proc.join(1)
                raise RunBroken(_died(proc, paths))
            if not ready:
                print(f"stopped; judging what was observed ({sink.backlog()} chunks not yet judged) ...",
                      file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        proc.kill()
        proc.join(10)
        print(f"error: interrupted again while judging; {_left(paths)}", file=sys.stderr)
        return EXIT_INTERRUPTED
