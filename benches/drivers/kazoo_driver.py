"""Benchmark driver on Kazoo (Debian's python3-kazoo), for the side-by-side harness.

Usage: /usr/bin/python3 kazoo_driver.py <connect-string>
Prints "ready", then answers each stdin line "run <scenario> <ops> <path>" with
"ok <elapsed-ns> <latency-ns,...>" (or "err <message>"); "quit" ends it.
"""

import sys
import threading
import time

from kazoo.client import KazooClient

PAYLOAD = b"x"
IN_FLIGHT = 1000


def run(client, scenario, path, latencies):
    ops = len(latencies)
    if scenario == "get_data":
        for i in range(ops):
            t = time.perf_counter_ns()
            client.get(path)
            latencies[i] = time.perf_counter_ns() - t
    elif scenario == "create_delete":
        for i in range(ops):
            t = time.perf_counter_ns()
            node = "%s/n%d" % (path, i)
            client.create(node, PAYLOAD)
            client.delete(node)
            latencies[i] = time.perf_counter_ns() - t
    elif scenario == "pipelined_get_data":
        for batch in range(0, ops, IN_FLIGHT):
            n = min(IN_FLIGHT, ops - batch)
            done = threading.Semaphore(0)

            def finished(result, slot, issued):
                latencies[slot] = time.perf_counter_ns() - issued
                done.release()

            for i in range(n):
                issued = time.perf_counter_ns()
                result = client.get_async(path)
                result.rawlink(lambda r, slot=batch + i, issued=issued: finished(r, slot, issued))
            for _ in range(n):
                if not done.acquire(timeout=60):
                    raise RuntimeError("pipelined batch timed out")
    else:
        raise ValueError("unknown scenario " + scenario)


def main():
    client = KazooClient(hosts=sys.argv[1], timeout=30.0)
    client.start(timeout=30)
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        try:
            latencies = [0] * int(words[2])
            start = time.perf_counter_ns()
            run(client, words[1], words[3], latencies)
            elapsed = time.perf_counter_ns() - start
            print("ok %d %s" % (elapsed, ",".join(str(x) for x in latencies)), flush=True)
        except Exception as error:  # reported to the harness, which stops
            print("err %r" % (error,), flush=True)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
