"""Benchmark driver on Kazoo (Debian's python3-kazoo), for the side-by-side harness.

Usage: /usr/bin/python3 kazoo_driver.py <connect-string> [--tls-ca <ca.pem>]
(with --tls-ca every session connects over TLS, trusting that CA; Kazoo checks the certificate
chain but not the host name.)
Prints "ready", then answers each stdin line "run <scenario> <ops> <path>" with
"ok <elapsed-ns> <latency-ns,...>" (or "err <message>"); "quit" ends it.
"""

import gc
import queue
import socket
import sys
import threading
import time
import tracemalloc

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.recipe.cache import TreeCache, TreeEvent

PAYLOAD = b"x"
IN_FLIGHT = 1000
CONTENDERS = 8
contenders = []


# The session timeout of crash_join, the same in every driver.
CRASH_SESSION_S = 2.0

# Sessions of crash_join, kept open until the process ends.
kept = []


def new_client(timeout=30.0):
    """A KazooClient for the connect string of the command line (over TLS with --tls-ca)."""
    if len(sys.argv) == 4 and sys.argv[2] == "--tls-ca":
        return KazooClient(hosts=sys.argv[1], timeout=timeout, use_ssl=True, ca=sys.argv[3])
    return KazooClient(hosts=sys.argv[1], timeout=timeout)


def loaded_tree_cache(client, path, timeout=300):
    """A started TreeCache of the tree at path, once its initial load is done (timeout None:
    no limit but the harness's)."""
    cache = TreeCache(client, path)
    ready = threading.Event()
    cache.listen(lambda event: event.event_type == TreeEvent.INITIALIZED and ready.set())
    cache.start()
    if not ready.wait(timeout):
        raise RuntimeError("initial load timed out")
    return cache


def run(client, scenario, path, latencies):
    ops = len(latencies)
    if scenario.startswith("scale_"):
        run_scale(client, scenario, path, latencies)
    elif scenario == "cache_initial_load":
        # A TreeCache loads the tree at path; every latency is the whole load.
        t = time.perf_counter_ns()
        cache = loaded_tree_cache(client, path)
        took = time.perf_counter_ns() - t
        cache.close()
        for i in range(ops):
            latencies[i] = took
    elif scenario == "cache_memory":
        # Python memory held by a loaded TreeCache, per node (tracemalloc), in every slot;
        # run in a fresh process.
        gc.collect()
        tracemalloc.start()
        cache = loaded_tree_cache(client, path)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        cache.close()
        for i in range(ops):
            latencies[i] = held // ops
    elif scenario == "cache_update_latency":
        # From a set of path/n to the cache's listener seeing the new value.
        node = path + "/n"
        client.ensure_path(path)
        try:
            client.create(node, b"0")
        except NodeExistsError:
            pass
        cache = TreeCache(client, path)
        ready = threading.Event()
        changes = queue.Queue()

        def listener(event):
            if event.event_type == TreeEvent.INITIALIZED:
                ready.set()
            elif event.event_type == TreeEvent.NODE_UPDATED and event.event_data.path == node:
                changes.put(event.event_data.data)

        cache.listen(listener)
        cache.start()
        if not ready.wait(60):
            raise RuntimeError("initial load timed out")
        for i in range(ops):
            value = str(i).encode()
            t = time.perf_counter_ns()
            client.set(node, value)
            while changes.get(timeout=30) != value:
                pass
            latencies[i] = time.perf_counter_ns() - t
        cache.close()
    elif scenario == "get_data":
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
    elif scenario == "mutex_uncontended":
        lock = client.Lock(path)
        for i in range(ops):
            t = time.perf_counter_ns()
            lock.acquire()
            lock.release()
            latencies[i] = time.perf_counter_ns() - t
    elif scenario == "mutex_contended":
        # CONTENDERS sessions loop on one lock until the hand-overs add up to the count.
        while len(contenders) < CONTENDERS:
            other = new_client()
            other.start(timeout=30)
            contenders.append(other)
        contend(contenders, path, latencies, ops)
    elif scenario == "crash_join":
        # A role of the crash failover: join the election at path on a new session
        # (CRASH_SESSION_S, as every driver) and return once leading; the session stays open
        # until the process is killed.
        session = new_client(timeout=CRASH_SESSION_S)
        session.start(timeout=30)
        leading = threading.Event()

        def lead():
            leading.set()
            threading.Event().wait()

        threading.Thread(target=session.Election(path, "crash").run, args=(lead,), daemon=True).start()
        leading.wait()
        kept.append(session)
    elif scenario == "leader_handover":
        # Kazoo's election (a lock underneath): two participants on separate sessions hand
        # leadership back and forth; each latency runs from the leader's resignation to the
        # other's leadership function starting, the other in line before it.
        sessions = []
        for _ in range(2):
            session = new_client()
            session.start(timeout=30)
            sessions.append(session)
        leading = queue.Queue()
        resign = [threading.Event(), threading.Event()]
        stop = threading.Event()

        elections = [sessions[i].Election(path, "p%d" % i) for i in range(2)]

        def participate(index):
            election = elections[index]
            while not stop.is_set():
                def lead():
                    leading.put((index, time.perf_counter_ns()))
                    resign[index].wait()
                    resign[index].clear()
                election.run(lead)

        threads = [threading.Thread(target=participate, args=(i,), daemon=True) for i in range(2)]
        for thread in threads:
            thread.start()
        current, _ = leading.get(timeout=60)
        for i in range(ops):
            # In line: the follower's session watches the leader's node (Kazoo's lock reads
            # its predecessor with a watch), as every driver waits.
            lock = elections[current].lock
            leader_node = "%s/%s" % (lock.path, lock.node)
            in_line_by = time.monotonic() + 30
            while not sessions[1 - current]._data_watchers.get(leader_node):
                if time.monotonic() > in_line_by:
                    raise RuntimeError("the follower did not get in line")
                time.sleep(0.0005)
            t = time.perf_counter_ns()
            resign[current].set()
            current, started = leading.get(timeout=60)
            latencies[i] = started - t
        stop.set()
        resign[current].set()
        for session in sessions:
            session.stop()
            session.close()
    elif scenario in ("counter_8way", "counter_8way_plain"):
        # CONTENDERS sessions increment one Kazoo Counter until the increments add up to the
        # count (Kazoo stores the number as text and retries on version conflicts).
        while len(contenders) < CONTENDERS:
            other = new_client()
            other.start(timeout=30)
            contenders.append(other)
        # Counter's += increments at the server (the new value is read back).
        race(contenders, latencies, ops, lambda session: session.Counter(path),
             lambda shared: shared + 1)
    elif scenario in ("queue_1x1", "queue_4x4"):
        # n producer and n consumer sessions on one Kazoo Queue; one op = an item taken. Kazoo's
        # Queue.get does not wait, so an empty poll sleeps 1 ms before trying again.
        n = 1 if scenario == "queue_1x1" else 4
        while len(contenders) < CONTENDERS:
            other = new_client()
            other.start(timeout=30)
            contenders.append(other)
        state = {"taken": 0}
        guard = threading.Lock()
        failures = []

        def produce(session, count):
            queue = session.Queue(path)
            try:
                for _ in range(count):
                    queue.put(b"x")
            except Exception as error:  # reported after the join
                failures.append(error)

        def consume(session):
            queue = session.Queue(path)
            try:
                while True:
                    with guard:
                        if state["taken"] >= ops:
                            return
                    t = time.perf_counter_ns()
                    item = queue.get()
                    if item is None:
                        time.sleep(0.001)
                        continue
                    with guard:
                        slot = state["taken"]
                        state["taken"] += 1
                    if slot < ops:
                        latencies[slot] = time.perf_counter_ns() - t
            except Exception as error:  # reported after the join
                failures.append(error)

        threads = [
            threading.Thread(target=produce, args=(contenders[p], ops // n + (1 if p < ops % n else 0)))
            for p in range(n)
        ] + [threading.Thread(target=consume, args=(contenders[4 + k],)) for k in range(n)]
        run_threads(threads, failures)
    else:
        raise ValueError("unknown scenario " + scenario)


# The scale scenarios (bench-scale): scale_<family>_<n>; see bench-driver.rs for each.


def watch_counters():
    """(watches set now, watches triggered so far) from the server's mntr."""
    host, port = sys.argv[1].split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"mntr")
        chunks = []
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    values = {}
    for line in b"".join(chunks).decode().splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2:
            try:
                values[parts[0]] = int(float(parts[1]))
            except ValueError:
                pass
    fired = sum(values.get("zk_sum_node_%s_watch_count" % kind, 0)
                for kind in ("created", "deleted", "changed", "children"))
    return values.get("zk_watch_count", 0), fired


def scale_sessions(n):
    sessions = []
    for _ in range(n):
        session = new_client()
        session.start(timeout=30)
        sessions.append(session)
    return sessions


def close_sessions(sessions):
    for session in sessions:
        try:
            session.stop()
            session.close()
        except Exception:  # closing anyway
            pass


def scale_election(path, latencies, n):
    """n participants of one Election on n sessions; k hand-overs (the leader's resignation to
    the next one's leadership function starting); slot k: watches triggered during them; slot
    k + 1: watches set once everyone joined."""
    k = len(latencies) - 2
    if k < 1 or k >= n:
        raise ValueError("%d hand-overs need more than %d participants" % (k, n))
    watches_before, _ = watch_counters()
    sessions = scale_sessions(n)
    leading = queue.Queue()
    resign = [threading.Event() for _ in range(n)]

    def participate(index):
        def lead():
            leading.put((index, time.perf_counter_ns()))
            resign[index].wait()
        try:
            sessions[index].Election(path, "p%d" % index).run(lead)
        except Exception:  # the session closed under it at the end
            pass

    threads = [threading.Thread(target=participate, args=(i,), daemon=True) for i in range(n)]
    try:
        for thread in threads:
            thread.start()
        current, _ = leading.get(timeout=120)
        lister = sessions[0].Election(path)
        deadline = time.monotonic() + 120
        while len(lister.contenders()) < n:
            if time.monotonic() > deadline:
                raise RuntimeError("not every participant joined")
            time.sleep(0.005)
        registered = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            registered = watch_counters()[0] - watches_before
            if registered >= n - 1:
                break
            time.sleep(0.01)
        _, fired_before = watch_counters()
        for i in range(k):
            t = time.perf_counter_ns()
            resign[current].set()
            current, started = leading.get(timeout=60)
            latencies[i] = started - t
        latencies[k] = watch_counters()[1] - fired_before
        latencies[k + 1] = registered
    finally:
        close_sessions(sessions)
        for event in resign:
            event.set()


def race(sessions, latencies, ops, prepare, timed, after=None):
    """Each session, on a thread of its own, loops on timed(prepare(session)) (then
    after(...)) until the calls add up to ops; slot i gets the i-th call's time."""
    counter = {"next": 0}
    guard = threading.Lock()
    failures = []

    def loop(session):
        item = prepare(session)
        try:
            while True:
                t = time.perf_counter_ns()
                timed(item)
                with guard:
                    slot = counter["next"]
                    counter["next"] += 1
                if slot < ops:
                    latencies[slot] = time.perf_counter_ns() - t
                if after is not None:
                    after(item)
                if slot >= ops - 1:
                    break
        except Exception as error:  # reported after the join
            failures.append(error)

    run_threads([threading.Thread(target=loop, args=(s,)) for s in sessions], failures)


def run_threads(threads, failures):
    """Starts threads, waits for all of them, then raises the first failure they recorded."""
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def contend(sessions, path, latencies, ops):
    """Each session loops acquire -> release on the lock at path until the acquisitions add up
    to ops; slot i gets the i-th acquisition's wait."""
    race(sessions, latencies, ops, lambda session: session.Lock(path),
         lambda lock: lock.acquire(), after=lambda lock: lock.release())


def scale_mutex(path, latencies, n):
    """n sessions loop on one lock until the hand-overs add up to ops = len - 1; the last slot
    holds the contended window."""
    ops = len(latencies) - 1
    sessions = scale_sessions(n)
    try:
        window = time.perf_counter_ns()
        contend(sessions, path, latencies, ops)
        latencies[ops] = time.perf_counter_ns() - window
    finally:
        close_sessions(sessions)


def scale_locks(client, path, latencies):
    """n = ops - 1 independent locks acquired one after another and held; slot n: Python memory
    held per lock (tracemalloc). tracemalloc slows Python down, so the timed pass runs without
    it and a second pass (after releasing everything) measures the memory."""
    n = len(latencies) - 1
    held = []
    for i in range(n):
        lock = client.Lock("%s/l%d" % (path, i))
        t = time.perf_counter_ns()
        lock.acquire()
        latencies[i] = time.perf_counter_ns() - t
        held.append(lock)
    for lock in held:
        lock.release()
    held = []
    gc.collect()
    tracemalloc.start()
    for i in range(n):
        lock = client.Lock("%s/l%d" % (path, i))
        lock.acquire()
        held.append(lock)
    gc.collect()
    used, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    latencies[n] = used // max(n, 1)
    for lock in held:
        lock.release()


def scale_cache(client, path, latencies, n):
    """A TreeCache loads the tree at path: slot 0 the load (timed without tracemalloc), slot 1
    Python memory per node (tracemalloc, a second load in the same process)."""
    t = time.perf_counter_ns()
    cache = loaded_tree_cache(client, path, None)
    latencies[0] = time.perf_counter_ns() - t
    cache.close()
    del cache
    gc.collect()
    tracemalloc.start()
    cache = loaded_tree_cache(client, path, None)
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    loaded = sum(1 for _ in walk(cache, path))
    cache.close()
    latencies[1] = held // max(loaded, 1)
    if loaded < n:
        raise RuntimeError("loaded only %d of %d nodes" % (loaded, n))


def walk(cache, path):
    """Every node of a TreeCache under path (path included)."""
    stack = [path]
    while stack:
        node = stack.pop()
        yield node
        children = cache.get_children(node) or ()
        stack.extend(node.rstrip("/") + "/" + child for child in children)


def scale_queue(client, path, latencies):
    """k = ops / 2 puts then k gets on a Kazoo Queue holding a backlog put there by the harness."""
    shared = client.Queue(path)
    k = len(latencies) // 2
    for i in range(k):
        t = time.perf_counter_ns()
        shared.put(b"x")
        latencies[i] = time.perf_counter_ns() - t
    for i in range(k):
        t = time.perf_counter_ns()
        if shared.get() is None:
            raise RuntimeError("the queue was empty")
        latencies[k + i] = time.perf_counter_ns() - t


def run_scale(client, scenario, path, latencies):
    family, n = scenario.rsplit("_", 1)
    n = int(n)
    if family == "scale_election":
        scale_election(path, latencies, n)
    elif family == "scale_mutex":
        scale_mutex(path, latencies, n)
    elif family == "scale_locks":
        scale_locks(client, path, latencies)
    elif family == "scale_cache":
        scale_cache(client, path, latencies, n)
    elif family == "scale_queue":
        scale_queue(client, path, latencies)
    else:
        raise ValueError("unknown scenario " + scenario)


def main():
    client = new_client()
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
    for session in [client] + contenders:
        session.stop()
        session.close()


if __name__ == "__main__":
    main()
