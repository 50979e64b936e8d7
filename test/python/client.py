#!/usr/bin/env python3
"""A huitian client not written in Go: Plan and ReportEvents over gRPC.

Usage: client.py ADDRESS REPO_ROOT

Generates the Python stubs from proto/ into a temporary folder with
grpc_tools.protoc (Debian's python3-grpc-tools), then, over an insecure gRPC
channel (HTTP/2 without TLS) to ADDRESS (host:port):
  1. Plan on a two-node cluster, checking that the head job starts;
  2. ReportEvents with a started and a finished event, then the same two
     again, checking accepted 2 / duplicates 2;
  3. a Plan with an invalid job, checking INVALID_ARGUMENT naming the field.
Prints one line per step and "python client: ok" at the end; exits non-zero
on any failure.
"""

import importlib
import os
import sys
import tempfile


def generate(repo, out):
    from grpc_tools import protoc
    import grpc_tools

    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    proto = os.path.join(repo, "proto")
    for f in ["buf/validate/validate.proto", "huitian/v1/huitian.proto"]:
        args = ["protoc", "-I" + proto, "-I" + well_known, "--python_out=" + out]
        if f.startswith("huitian"):
            args.append("--grpc_python_out=" + out)
        args.append(os.path.join(proto, f))
        if protoc.main(args) != 0:
            sys.exit("protoc failed for " + f)
    for d in ["buf", "buf/validate", "huitian", "huitian/v1"]:
        open(os.path.join(out, d, "__init__.py"), "a").close()
    sys.path.insert(0, out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    address, repo = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as out:
        generate(repo, out)
        import grpc

        pb = importlib.import_module("huitian.v1.huitian_pb2")
        rpc = importlib.import_module("huitian.v1.huitian_pb2_grpc")

        channel = grpc.insecure_channel(address)
        stub = rpc.PlannerServiceStub(channel)
        md = []
        token = os.environ.get("HUITIAN_TOKEN")
        if token:
            md.append(("authorization", "Bearer " + token))

        # 1. Plan.
        req = pb.PlanRequest()
        req.now.FromJsonString("2026-11-29T10:00:00Z")
        req.cluster.id = "py"
        for n in ["p1", "p2"]:
            node = req.cluster.nodes.add(name=n)
            for i in range(8):
                node.cards.add(index=i, model="H100", numa_node=-1)
        job = req.queued.add(id="py-train", user="pat", cards=8, topology=pb.TOPOLOGY_SAME_NODE)
        job.time_limit.FromSeconds(3600)
        job.submit_time.FromJsonString("2026-11-29T09:00:00Z")
        resp = stub.Plan(req, metadata=md, timeout=30)
        starts = [s.job_id for s in resp.starts]
        if starts != ["py-train"]:
            sys.exit("plan: starts %r, want ['py-train']" % starts)
        print("plan: started %s on %d cards (solver %s)" % (starts[0], len(resp.starts[0].cards), resp.stats.solver))

        # 2. ReportEvents, twice: the second time everything is a duplicate.
        ev = pb.ReportEventsRequest(cluster_id="py")
        st = ev.events.add(job_id="py-train", kind=pb.JOB_EVENT_KIND_STARTED)
        st.time.FromJsonString("2026-11-29T10:00:00Z")
        st.spec.CopyFrom(job)
        fin = ev.events.add(job_id="py-train", kind=pb.JOB_EVENT_KIND_FINISHED, exit=pb.EXIT_STATE_COMPLETED)
        fin.time.FromJsonString("2026-11-29T10:40:00Z")
        fin.start_time.FromJsonString("2026-11-29T10:00:00Z")
        fin.spec.CopyFrom(job)
        first = stub.ReportEvents(ev, metadata=md, timeout=30)
        again = stub.ReportEvents(ev, metadata=md, timeout=30)
        if (first.accepted, first.duplicates, again.accepted, again.duplicates) != (2, 0, 0, 2):
            sys.exit("report events: got %s / %s" % (first, again))
        print("report events: accepted %d, then %d duplicates" % (first.accepted, again.duplicates))

        # 3. An invalid request names its field.
        req.queued[0].cards = 0
        try:
            stub.Plan(req, metadata=md, timeout=30)
            sys.exit("invalid plan: no error")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.INVALID_ARGUMENT or "queued[0].cards" not in e.details():
                sys.exit("invalid plan: got %s %s" % (e.code(), e.details()))
            print("invalid plan: %s names queued[0].cards" % e.code().name)
        channel.close()
    print("python client: ok")


if __name__ == "__main__":
    main()
