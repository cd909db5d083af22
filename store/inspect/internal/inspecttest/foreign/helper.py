# The Python side of store/inspect's tests with real clients: redis-py's
# Lock (Debian python3-redis). Each stdin line is JSON {"op": ..., ...};
# each reply one JSON line {"event": op, "data": {...}}.
import json
import sys

import redis

locks = {}
client = None


def reply(event, data=None):
    sys.stdout.write(json.dumps({"event": event, "data": data or {}}) + "\n")
    sys.stdout.flush()


reply("ready")
for line in sys.stdin:
    msg = json.loads(line)
    try:
        op = msg["op"]
        if op == "connect":
            host, port = msg["addr"].split(":")
            client = redis.Redis(host=host, port=int(port))
            reply(op)
        elif op == "acquire":  # a new holder tries once
            lock = client.lock(msg["name"], timeout=60)
            ok = lock.acquire(blocking=False)
            if ok:
                locks[msg["id"]] = lock
            reply(op, {"acquired": ok, "token": lock.local.token.decode() if ok else ""})
        elif op == "release":
            locks.pop(msg["id"]).release()
            reply(op)
        else:
            reply("error", {"error": "unknown op " + op})
    except Exception as e:  # reported, the helper goes on
        reply("error", {"error": "%s: %s" % (type(e).__name__, e)})
