"""Ask a server's /_stcore/health every EVERY seconds until stdin closes; print one JSON line per answer.

Run as its own process by the load test: a poller thread inside the test process would wait for that
process's GIL, busy with eight browser sessions and their websocket frames, and blame the server for it.

    python -m tests.load.health_poll http://127.0.0.1:PORT 0.25
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request


def main(base_url: str, every: float) -> None:
    url = f"{base_url}/_stcore/health"
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    began = time.perf_counter()
    while not stop.is_set():
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read()
            problem = None if response.status == 200 and body == b"ok" else f"{response.status} {body[:40]!r}"
        except OSError as err:
            problem = repr(err)
        answer = {"at": round(start - began, 3), "seconds": time.perf_counter() - start, "problem": problem}
        print(json.dumps(answer), flush=True)
        stop.wait(every)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
