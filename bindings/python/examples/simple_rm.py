#!/usr/bin/env python3
"""A tiny resource manager: a few nodes, a few jobs, each task runs for a while.

It registers with the scheduler, adds nodes and applications, asks for one
allocation per task, "runs" each allocated task for a short time on a timer,
releases it, and removes each application once all its tasks finished.

    python examples/simple_rm.py --nodes 3 --apps 2 --tasks 5
"""

from __future__ import annotations

import argparse
import json
import logging
import threading

import sicore
from sicore import si_pb2

RM_ID = "example-rm"
log = logging.getLogger("example")


def resource(memory: int, vcore: int) -> si_pb2.Resource:
    return si_pb2.Resource(resources={
        "memory": si_pb2.Quantity(value=memory),
        "vcore": si_pb2.Quantity(value=vcore),
    })


class ExampleRM(sicore.ResourceManagerCallback):
    """Runs every allocated task for ``run_seconds``, then releases it."""

    def __init__(self, tasks_per_app: dict[str, int], run_seconds: float) -> None:
        self.scheduler: sicore.Scheduler | None = None
        self.remaining = dict(tasks_per_app)
        self.run_seconds = run_seconds
        self.lock = threading.Lock()
        self.all_done = threading.Event()
        self.placements: list[tuple[str, str, str]] = []

    # Callbacks run on the library's threads. Async calls back into the
    # scheduler are fine from here; synchronous ones would raise.

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        for node in response.accepted:
            log.info("node %s accepted", node.nodeID)
        for node in response.rejected:
            log.warning("node %s rejected: %s", node.nodeID, node.reason)

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        for app in response.accepted:
            log.info("application %s accepted", app.applicationID)
        for app in response.rejected:
            log.warning("application %s rejected: %s", app.applicationID, app.reason)
        for app in response.updated:
            log.info("application %s is now %s", app.applicationID, app.state)

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        for alloc in response.new:
            log.info("task %s of %s runs on %s", alloc.allocationKey, alloc.applicationID, alloc.nodeID)
            with self.lock:
                self.placements.append((alloc.applicationID, alloc.allocationKey, alloc.nodeID))
            timer = threading.Timer(self.run_seconds, self.finish, args=(alloc,))
            timer.daemon = True
            timer.start()
        for released in response.released:
            log.info("allocation %s released (%s)", released.UUID,
                     si_pb2.TerminationType.Name(released.terminationType))
        for rejected in response.rejected:
            log.warning("ask %s rejected: %s", rejected.allocationKey, rejected.reason)

    def finish(self, alloc: si_pb2.Allocation) -> None:
        """Called on a timer thread when a task completes."""
        assert self.scheduler is not None
        try:
            self.scheduler.update_allocation(si_pb2.AllocationRequest(
                rmID=RM_ID,
                releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=[si_pb2.AllocationRelease(
                    partitionName=alloc.partitionName, applicationID=alloc.applicationID,
                    UUID=alloc.UUID, terminationType=si_pb2.STOPPED_BY_RM, message="task finished")])))
            with self.lock:
                self.remaining[alloc.applicationID] -= 1
                app_done = self.remaining[alloc.applicationID] == 0
                everything_done = all(n == 0 for n in self.remaining.values())
            if app_done:
                self.scheduler.update_application(si_pb2.ApplicationRequest(rmID=RM_ID, remove=[
                    si_pb2.RemoveApplicationRequest(applicationID=alloc.applicationID,
                                                    partitionName="default")]))
            if everything_done:
                self.all_done.set()
        except sicore.StoppedError:
            pass  # the scheduler was closed while the task ran


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--apps", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=4, help="tasks per application")
    parser.add_argument("--run-seconds", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--library", help="path to libsicore (default: search)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the library's debug log")
    args = parser.parse_args()

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")

    apps = {f"app-{i}": args.tasks for i in range(args.apps)}
    rm = ExampleRM(apps, args.run_seconds)
    with sicore.Scheduler(library=args.library, scheduling_interval_ms=20,
                          log_level="debug" if args.verbose else "info") as sched:
        rm.scheduler = sched
        sched.register_resource_manager(
            si_pb2.RegisterResourceManagerRequest(rmID=RM_ID, version="example", policyGroup="queues"), rm)
        sched.update_node(si_pb2.NodeRequest(rmID=RM_ID, nodes=[
            si_pb2.NodeInfo(nodeID=f"node-{i}", action=si_pb2.NodeInfo.CREATE,
                            schedulableResource=resource(4096, 4))
            for i in range(args.nodes)]))
        for app_id in apps:
            # The default config's `provided` rule creates root.<team> on demand.
            sched.update_application(si_pb2.ApplicationRequest(rmID=RM_ID, new=[
                si_pb2.AddApplicationRequest(applicationID=app_id, queueName=f"root.team-{app_id}",
                                             partitionName="default",
                                             ugi=si_pb2.UserGroupInformation(user="example"))]))
            sched.update_allocation(si_pb2.AllocationRequest(rmID=RM_ID, asks=[
                si_pb2.AllocationAsk(allocationKey=f"{app_id}-task-{t}", applicationID=app_id,
                                     partitionName="default", resourceAsk=resource(1024, 1),
                                     maxAllocations=1)
                for t in range(args.tasks)]))
        finished = rm.all_done.wait(args.timeout)
        dump = sched.state_dump()
    queues = [q["path"] for p in dump["partitions"] for q in p["root"]["children"]]
    print(json.dumps({"finished": finished, "tasks_run": len(rm.placements), "queues": queues}))
    return 0 if finished else 1


if __name__ == "__main__":
    raise SystemExit(main())
