"""YuniKorn's BenchmarkScheduling through the Python binding, and where the time goes.

The scenario of ``cargo bench --bench scheduling``: queues ``root.a`` and
``root.b``, one application in each, nodes of ``{memory: 10*k, vcore: k}``
with ``k = allocations/nodes + 1``, asks of ``{memory: 10, vcore: 1}``. Two
request shapes: ``asks``, one ask per allocation in requests of 5,000, and
``apps``, the reference's own, one ask per application with
``maxAllocations`` half the allocations. Timed from submitting the asks
until the RM's ``update_allocation`` has seen every allocation; the RM
decodes every message (the binding does that) and counts the allocations.

Then the breakdown: every ``AllocationResponse`` the library delivered in
one more run is replayed, on this thread, through the steps a callback
takes, and each step is timed per allocation (this thread's CPU time, the fastest
of several passes):

- ``ctypes entry``: entering a ctypes callback that does nothing, called
  through its C function pointer, less the cost of calling a C function
  of the same shape from Python (which the library, calling from C, does
  not pay). The library's dispatcher is not a Python thread, which adds
  the thread-state switch that the per-thread CPU columns include;
- ``copy``: copying the message out of the library's buffer;
- ``decode``: ``si_pb2.AllocationResponse.FromString``;
- ``binding``: the rest of the binding's trampoline (its Python body,
  called directly, with an RM method that does nothing, less the copy and
  the decode): the registry look-up, the re-entrancy bookkeeping, calling
  the method;
- ``rm``: the RM's own method (here: counting).

Run from the checkout (``SICORE_LIBRARY`` or ``target/release`` is used)::

    python bindings/python/benchmarks/bench_scheduling.py
    python bindings/python/benchmarks/bench_scheduling.py --nodes 500 --runs 3 --shape apps
    python bindings/python/benchmarks/bench_scheduling.py --predicates --no-breakdown
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

try:
    import sicore
except ImportError:  # running from the checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import sicore

from google.protobuf.internal import api_implementation

from sicore import _callbacks, si_pb2

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              guaranteed: {memory: 100000, vcore: 10000}
          - name: b
            resources:
              guaranteed: {memory: 1000000, vcore: 10000}
"""


class BenchRM(sicore.ResourceManagerCallback):
    """Counts what arrives; wakes the waiting thread when a target is reached."""

    def __init__(self, record: bool = False) -> None:
        self.allocations = 0
        self.nodes = 0
        self.apps = 0
        self.target = 0
        self.done = threading.Event()
        self.messages: list[bytes] | None = [] if record else None

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        self.allocations += len(response.new)
        if self.messages is not None:
            self.messages.append(response.SerializeToString())
        if self.allocations >= self.target:
            self.done.set()

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        self.nodes += len(response.accepted)
        if self.nodes >= self.target:
            self.done.set()

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        self.apps += len(response.accepted)
        if self.apps >= self.target:
            self.done.set()

    def expect(self, target: int) -> None:
        """Wake the waiter once ``target`` of the next thing have arrived."""
        self.target = target
        self.done.clear()

    def wait(self, what: str) -> None:
        if not self.done.wait(600):
            raise TimeoutError(f"timed out waiting for {what}")


class PredicatesRM(BenchRM):
    """Also answers Predicates (every node fits) and takes the ReSyncs before them.

    The path of a Kubernetes RM: per allocation, one ReSync and one
    Predicates call from the library's core thread, each a small message.
    """

    def predicates(self, args: si_pb2.PredicatesArgs) -> None:
        pass

    def resync_scheduler_cache(self, args: si_pb2.ReSyncSchedulerCacheArgs) -> None:
        pass


def _res(memory: int, vcore: int) -> si_pb2.Resource:
    return si_pb2.Resource(resources={"memory": si_pb2.Quantity(value=memory),
                                      "vcore": si_pb2.Quantity(value=vcore)})


def requests(shape: str, allocations: int) -> list[si_pb2.AllocationRequest]:
    """The asks of one run, already built (the timed part starts at submission)."""
    if shape == "apps":
        first = allocations // 2
        return [
            si_pb2.AllocationRequest(rmID="rm", asks=[si_pb2.AllocationAsk(
                allocationKey="alloc-1", applicationID=f"app-{app}", partitionName="default",
                resourceAsk=_res(10, 1), maxAllocations=n)])
            for app, n in ((0, first), (1, allocations - first))
        ]
    out = []
    for start in range(0, allocations, 5000):
        out.append(si_pb2.AllocationRequest(rmID="rm", asks=[
            si_pb2.AllocationAsk(allocationKey=f"ask-{i}", applicationID=f"app-{i % 2}",
                                 partitionName="default", resourceAsk=_res(10, 1), maxAllocations=1)
            for i in range(start, min(start + 5000, allocations))
        ]))
    return out


def thread_cpu_seconds() -> dict[str, float]:
    """CPU seconds per thread kind (core, dispatcher, python), from /proc.

    ``schedstat`` counts nanoseconds on the CPU (``stat`` only clock ticks,
    too coarse for a run of a few tens of milliseconds).
    """
    out: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            secs = int((task / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
        kind = ("core" if name.startswith("sicore-core") else
                "dispatch" if name.startswith("sicore-dispatch") else "python")
        out[kind] = out.get(kind, 0.0) + secs
    return out


def run(nodes: int, allocations: int, shape: str, record: bool = False, predicates: bool = False,
        outstanding_check: bool = True) -> tuple[float, dict[str, float], list[bytes]]:
    """One run: (seconds, CPU seconds per thread kind, delivered messages if recorded)."""
    rm = PredicatesRM(record) if predicates else BenchRM(record)
    # The outstanding-request check reports every waiting ask once a second:
    # its cost follows the seconds a run lasts, not the allocations (under
    # callgrind a run lasts ~50x longer), so --no-outstanding-check moves it
    # to once an hour.
    interval = None if outstanding_check else 3_600_000
    with sicore.Scheduler(policy_configs={"bench": CONFIG}, disable_events=True,
                          log_level="warn", outstanding_check_interval_ms=interval) as s:
        s.register_resource_manager(
            si_pb2.RegisterResourceManagerRequest(rmID="rm", version="bench", policyGroup="bench"), rm)
        k = allocations // nodes + 1
        rm.expect(nodes)
        for start in range(0, nodes, 10000):
            s.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[
                si_pb2.NodeInfo(nodeID=f"node-{i:06d}", action=si_pb2.NodeInfo.CREATE,
                                schedulableResource=_res(10 * k, k))
                for i in range(start, min(start + 10000, nodes))
            ]))
        rm.wait("nodes")
        rm.expect(2)
        s.update_application(si_pb2.ApplicationRequest(rmID="rm", new=[
            si_pb2.AddApplicationRequest(
                applicationID=f"app-{i}", queueName=q, partitionName="default",
                ugi=si_pb2.UserGroupInformation(user="bench"))
            for i, q in enumerate(("root.a", "root.b"))
        ]))
        rm.wait("applications")
        reqs = requests(shape, allocations)
        rm.expect(allocations)
        cpu_before = thread_cpu_seconds()
        start = time.perf_counter()
        for r in reqs:
            s.update_allocation(r)
        rm.wait("allocations")
        secs = time.perf_counter() - start
        cpu_after = thread_cpu_seconds()
    cpu = {k: cpu_after.get(k, 0.0) - cpu_before.get(k, 0.0) for k in cpu_after}
    return secs, cpu, rm.messages or []


def _per_alloc_ns(fn: Callable[[int, int], object], messages: list[tuple[int, int]],
                  allocations: int, passes: int) -> float:
    """The fastest of ``passes`` of ``fn(addr, length)`` for every message, in ns per allocation.

    This thread's CPU time, not wall clock: time the thread waits for a CPU
    (two cores shared with builds) does not count; the fastest pass is the
    one least disturbed by the others' cache traffic.
    """
    times = []
    for _ in range(passes):
        t0 = time.thread_time_ns()
        for addr, length in messages:
            fn(addr, length)
        times.append(time.thread_time_ns() - t0)
    return min(times) / allocations


class _Quiet(sicore.ResourceManagerCallback):
    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        pass


def breakdown(messages: list[bytes], passes: int) -> list[tuple[str, float]]:
    """Replay the delivered messages through each step; ns per allocation per step.

    Every step is timed as a call from a Python loop and the cost of the
    loop calling an empty Python function is subtracted.
    """
    allocations = sum(len(si_pb2.AllocationResponse.FromString(m).new) for m in messages)
    buffers = [ctypes.create_string_buffer(m, len(m)) for m in messages]
    msgs = [(ctypes.addressof(b), len(m)) for b, m in zip(buffers, messages)]

    def per_alloc(fn: Callable[[int, int], object]) -> float:
        return _per_alloc_ns(fn, msgs, allocations, passes)

    loop = per_alloc(lambda _a, _n: None)
    status_fn = _callbacks.STATUS_CALLBACK
    noop = status_fn(lambda _ud, _p, _n, _e: 0)
    # ctypes calling a C function of the same shape from Python: the part of
    # the replay's call the library does not pay (it calls from C).
    c_noop = status_fn(ctypes.cast(ctypes.pythonapi.Py_IsInitialized, ctypes.c_void_p).value)
    call_out = per_alloc(lambda a, n: c_noop(None, a, n, None)) - loop
    entry = per_alloc(lambda a, n: noop(None, a, n, None)) - loop - call_out
    copy = per_alloc(lambda a, n: ctypes.string_at(a, n)) - loop  # noqa: PLW0108 - timed like the rest
    parse = si_pb2.AllocationResponse.FromString
    data = {a: ctypes.string_at(a, n) for a, n in msgs}
    decode = per_alloc(lambda a, _n: parse(data[a])) - per_alloc(lambda a, _n: data[a])

    # The binding's trampoline (its Python body: the ctypes entry is the
    # step above) with an RM method that does nothing, then with the
    # bench's counting RM.
    lib = sicore.load_library()
    body = _callbacks._status_call("update_allocation", si_pb2.AllocationResponse.FromString)
    through: dict[str, float] = {}
    for name, cb in (("quiet", _Quiet()), ("counting", BenchRM())):
        if isinstance(cb, BenchRM):
            cb.expect(1 << 62)
        handle, _table, _reg = _callbacks.add_registration(cb, lib, owner=0)
        try:
            through[name] = per_alloc(lambda a, n, h=handle: body(h, a, n, None)) - loop
        finally:
            _callbacks.drop_registration(handle)
    return [
        ("ctypes entry (C -> Python, empty callback)", entry),
        ("copy out of the library's buffer", copy),
        ("decode (AllocationResponse.FromString)", decode),
        ("binding's own work (the rest of the trampoline)", through["quiet"] - copy - decode),
        ("RM's method (counting)", through["counting"] - through["quiet"]),
        ("total", entry + through["counting"]),
    ]


def main() -> None:
    """Run the benchmark: both shapes at each size, then the breakdown."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    p.add_argument("--allocations", type=int, default=10000)
    p.add_argument("--runs", type=int, default=5, help="runs per size; the median is reported")
    p.add_argument("--shape", choices=["asks", "apps", "both"], default="both")
    p.add_argument("--no-breakdown", action="store_true")
    p.add_argument("--no-outstanding-check", action="store_true",
                   help="the outstanding-request check once an hour (for callgrind)")
    p.add_argument("--predicates", action="store_true",
                   help="the RM also implements predicates and resync_scheduler_cache")
    p.add_argument("--passes", type=int, default=15,
                   help="replay passes per breakdown step (the fastest counts)")
    args = p.parse_args()

    shapes = ["asks", "apps"] if args.shape == "both" else [args.shape]
    print(f"Python {sys.version.split()[0]}, protobuf {_protobuf_version()} "
          f"({api_implementation.Type()} runtime), library {sicore.load_library().path}")
    for shape in shapes:
        title = ("one ask per allocation" if shape == "asks" else
                 "one ask per application (maxAllocations allocations/2, the reference's shape)")
        if args.predicates:
            title += ", with predicates and resync_scheduler_cache"
        print(f"\nBenchmarkScheduling through the Python binding, {title}")
        print(f"{'nodes':>7} {'allocs':>7} {'median allocs/s':>16} {'best':>9} "
              f"{'CPU us/alloc: core':>19} {'dispatch':>9} {'python':>7}")
        for nodes in args.nodes:
            results = []
            for _ in range(args.runs):
                secs, cpu, _msgs = run(nodes, args.allocations, shape, predicates=args.predicates,
                                       outstanding_check=not args.no_outstanding_check)
                results.append((args.allocations / secs, cpu))
            rates = sorted(r for r, _ in results)
            med = statistics.median(rates)

            def cpu_us(kind: str, res: list[tuple[float, dict[str, float]]] = results) -> float:
                return statistics.median(c.get(kind, 0.0) for _, c in res) * 1e6 / args.allocations

            print(f"{nodes:>7} {args.allocations:>7} {med:>16,.0f} {rates[-1]:>9,.0f} "
                  f"{cpu_us('core'):>19.2f} {cpu_us('dispatch'):>9.2f} {cpu_us('python'):>7.2f}")
        if not args.no_breakdown:
            # A separate run records the messages (recording costs time).
            recorded = run(args.nodes[0], args.allocations, shape, record=True)[2]
            n = sum(len(si_pb2.AllocationResponse.FromString(m).new) for m in recorded)
            # The same allocations one per message: what a callback costs
            # when the library has one allocation to report (with a
            # Predicates callback, every allocation is reported alone).
            singles = [si_pb2.AllocationResponse(new=[a]).SerializeToString()
                       for m in recorded for a in si_pb2.AllocationResponse.FromString(m).new]
            print(f"\n  Replaying the {len(recorded)} AllocationResponse messages of a "
                  f"{args.nodes[0]}-node run ({n / len(recorded):.0f} allocations each), then the "
                  f"same {n} allocations one per message; us of CPU per allocation, fastest of "
                  f"{args.passes} passes:")
            batched = breakdown(recorded, args.passes)
            alone = breakdown(singles, args.passes)
            print(f"  {'step':<52} {'as delivered':>12} {'one per message':>16}")
            for (label, ns), (_, ns1) in zip(batched, alone):
                print(f"  {label:<52} {ns / 1000:>12.3f} {ns1 / 1000:>16.3f}")


def _protobuf_version() -> str:
    import google.protobuf
    return google.protobuf.__version__


if __name__ == "__main__":
    main()
