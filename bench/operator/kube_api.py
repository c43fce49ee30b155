"""A small Kubernetes API client for the benchmark's scripts: HTTPS with a bearer token, one
connection per object (not thread-safe: give each thread its own), JSON in and out, and a
watch that yields events. Standard library only."""
import http.client
import json
import ssl
import urllib.parse


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


class Api:
    """One keep-alive connection to `server` (https://host:port). `agent` is the User-Agent the
    API server's logs and audit see. Calls retry once on a dropped connection."""

    def __init__(self, server, token, ca_file, agent, timeout=30):
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.headers = {"Authorization": "Bearer " + token, "User-Agent": agent,
                        "Accept": "application/json"}
        self.timeout = timeout
        self.conn = None
        self.requests = 0  # every request sent, watches included

    def _connect(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        """Returns (status, decoded body). Raises ApiError for a status outside `ok`."""
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = self._connect(self.timeout)
            try:
                self.requests += 1
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        obj = json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode(errors="replace")
        if resp.status not in ok:
            raise ApiError(resp.status, raw.decode(errors="replace"))
        return resp.status, obj

    def get(self, path):
        return self.call("GET", path)[1]

    def watch(self, path, resource_version, timeout_s=240):
        """Yields (type, object) from a watch of `path` (a list URL) starting after
        `resource_version`; returns when the server ends the watch. A new connection of its own."""
        sep = "&" if "?" in path else "?"
        url = (f"{path}{sep}watch=1&allowWatchBookmarks=true&timeoutSeconds={timeout_s}"
               f"&resourceVersion={resource_version}")
        conn = self._connect(timeout_s + 30)
        try:
            self.requests += 1
            conn.request("GET", url, headers=self.headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise ApiError(resp.status, resp.read().decode(errors="replace"))
            buf = b""
            while True:
                chunk = resp.read1(1 << 16)
                if not chunk:
                    return
                buf += chunk
                while True:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        break
                    line, buf = buf[:nl], buf[nl + 1:]
                    if line.strip():
                        ev = json.loads(line)
                        yield ev["type"], ev["object"]
        finally:
            conn.close()
