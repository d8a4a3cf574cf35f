#!/usr/bin/env python3
"""tests/web_e2e.py — `meshplan web` end to end: start it on a free loopback port, call the API
over HTTP (the answers must equal `meshplan predict --json` and `search --json` for the same
job), check the refusals (413, 400 naming the field, 404), then load the page in headless
Chromium with a plan in the URL hash, read the prediction and the search result from the DOM
the page's script filled in, and take screenshots. Stops the server itself; bounded (< 60 s).

    web_e2e.py <path-to-meshplan> [SCREENSHOT_DIR]

Without Chromium the browser checks are skipped with a message (the API checks still run).
Prints "ok - ..." / "FAIL - ..." per check, then "N passed, M failed[, K skipped]"."""
import html.parser
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

DEADLINE = time.monotonic() + 55
PASSED, FAILED, SKIPPED = 0, 0, 0
# The server is on loopback: never through a proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

JOB = {"model": "llama3-70b", "gpu": "h100-sxm5-80gb", "gpus": 64,
       "plan": "tp=8,pp=2,gb=128,seq=8192,zero=1,recompute=selective"}
SEARCH = {"model": "llama3-70b", "gpu": "h100-sxm5-80gb", "gpus": 64, "gb": 128, "top": 20}


def check(name, cond, detail=""):
    global PASSED, FAILED
    if cond:
        PASSED += 1
        print("ok - " + name)
    else:
        FAILED += 1
        print("FAIL - %s%s" % (name, (": " + detail) if detail else ""))


def skip(name, why):
    global SKIPPED
    SKIPPED += 1
    print("skip - %s: %s" % (name, why))


def request(port, path, body=None, method=None, raw=None, headers=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data,
                                 method=method or ("POST" if data is not None else "GET"), headers=headers or {})
    try:
        with OPENER.open(req, timeout=20) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def start_server(mp):
    p = subprocess.Popen([mp, "web", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()  # "meshplan web: serving http://127.0.0.1:PORT/ ..."
    try:
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
    except (IndexError, ValueError):
        p.kill()
        raise SystemExit("web_e2e: the server did not say where it listens: %r %s" % (line, p.stderr.read()))
    return p, port


def cli_json(mp, args):
    out = subprocess.run([mp] + args + ["--json"], capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout)


def api_checks(mp, port):
    st, ctype, body = request(port, "/api/predict", JOB)
    check("POST /api/predict: 200 JSON", st == 200 and ctype.startswith("application/json"), "%d %s" % (st, ctype))
    want = cli_json(mp, ["predict", "--model", JOB["model"], "--gpu", JOB["gpu"], "--gpus", str(JOB["gpus"]),
                         "--plan", JOB["plan"]])
    got = json.loads(body)
    check("POST /api/predict answers what predict --json prints", got == want,
          "keys differing: %s" % [k for k in want if got.get(k) != want.get(k)])
    # the example job (it does not fit: an answer, not an error)
    st, _, body = request(port, "/api/predict", {"model": "llama3-8b", "gpu": "h100-sxm5-80gb", "gpus": 8,
                                                  "plan": "zero=1,gb=64"})
    check("the README's curl job answers 200 with feasible false", st == 200 and json.loads(body)["feasible"] is False)

    st, _, body = request(port, "/api/trace", JOB)
    want = cli_json(mp, ["trace", "--model", JOB["model"], "--gpu", JOB["gpu"], "--gpus", str(JOB["gpus"]),
                         "--plan", JOB["plan"]])
    got = json.loads(body) if st == 200 else {}
    for d in (got, want):
        d.get("simulated", {}).pop("wall_s", None)
    check("POST /api/trace answers what trace --json prints (but the wall time)", st == 200 and got == want,
          "status %d; keys differing: %s" % (st, [k for k in want if got.get(k) != want.get(k)]))

    st, _, body = request(port, "/api/search", SEARCH)
    want = cli_json(mp, ["search", "--model", "llama3-70b", "--gpu", "h100-sxm5-80gb", "--gpus", "64", "--gb", "128",
                         "--top", "20"])
    got = json.loads(body) if st == 200 else {}
    for d in (got, want):
        # the run's effort, not the answer: the time, the threads, and how many plans the
        # threads evaluated before the rest were proven unable to enter (order_skipped)
        d.pop("wall_s", None)
        d.pop("threads", None)
        for k in ("evaluated", "order_skipped", "memory_checked", "over_memory_proven", "bound_skipped"):
            d.get("counts", {}).pop(k, None)
    check("POST /api/search answers what search --json prints", st == 200 and got == want,
          "status %d; keys differing: %s" % (st, [k for k in want if got.get(k) != want.get(k)]))

    st, _, body = request(port, "/api/predict", raw=b" " * 70000)
    check("a 70000-byte body is refused: 413 with a JSON message",
          st == 413 and "at most 65536" in json.loads(body)["error"], "%d %r" % (st, body[:200]))
    st, _, body = request(port, "/api/predict", raw=b'{"model": "llama3-8b", "gpus": 8')
    check("malformed JSON: 400 with line and column",
          st == 400 and "malformed JSON at line 1" in json.loads(body)["error"], "%d %r" % (st, body[:200]))
    bad = dict(JOB, model="llama9-1t")
    st, _, body = request(port, "/api/predict", bad)
    e = json.loads(body)
    check("an unknown model: 400 naming the field", st == 400 and e.get("field") == "model" and "llama9-1t" in e["error"],
          "%d %r" % (st, e))
    st, _, body = request(port, "/api/predict", dict(JOB, gpus="64"))
    check("gpus as a string: 400 naming gpus", st == 400 and json.loads(body).get("field") == "gpus")
    st, _, _ = request(port, "/../../etc/passwd")
    check("a path outside the page: 404", st == 404)
    st, _, _ = request(port, "/api/predict")
    check("GET /api/predict: 405", st == 405)
    st, _, body = request(port, "/api/catalog", headers={"Host": "attacker.example:%d" % port})
    check("a Host header naming another machine: 403 (DNS rebinding)", st == 403 and b"Host header" in body, "%d" % st)
    st, _, _ = request(port, "/api/catalog", headers={"Host": "localhost:%d" % port})
    check("Host: localhost is served", st == 200, "%d" % st)
    st, ctype, body = request(port, "/vendor/chart.umd.min.js")
    check("the vendored Chart.js is served from the binary", st == 200 and b"Chart.js v4.6.1" in body[:200])


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Cells(html.parser.HTMLParser):
    """Attributes of the elements with an id, the body's, and the text inside each id'd element."""
    def __init__(self):
        super().__init__()
        self.by_id, self.body, self.text, self.open = {}, {}, {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if "id" in a:
            self.by_id[a["id"]] = a
        if tag not in VOID:
            self.open.append(a.get("id"))

    def handle_endtag(self, tag):
        if self.open:
            self.open.pop()

    def handle_data(self, data):
        if self.open and self.open[-1]:
            self.text[self.open[-1]] = self.text.get(self.open[-1], "") + data


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(port, url_hash, shot, budget_ms):
    """Load the page with the hash; returns the DOM after its script ran (and writes shot)."""
    remaining = DEADLINE - time.monotonic()
    if remaining < 10:
        raise TimeoutError("no time left for Chromium")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
               "--user-data-dir=" + profile, "--hide-scrollbars", "--window-size=1280,1300",
               "--virtual-time-budget=%d" % budget_ms, "--screenshot=" + shot, "--dump-dom",
               "http://127.0.0.1:%d/%s" % (port, url_hash)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=min(40, remaining - 5), cwd=profile)
    p = Cells()
    p.feed(out.stdout)
    return p


def browser_checks(port, shots, api_predict):
    if not chromium():
        skip("the page in headless Chromium", "chromium not found (scripts/setup.sh installs it)")
        return
    q = "#predict?model=llama3-70b&gpu=h100-sxm5-80gb&gpus=64&plan=" + JOB["plan"].replace("=", "%3D")
    shot = os.path.join(shots, "web-predict.png")
    dom = browser(port, q, shot, 8000)
    check("Chromium: the page predicted the plan from the URL", dom.body.get("data-state") == "predicted",
          "body %r" % dom.body)
    tps = dom.by_id.get("tokens_per_s", {}).get("data-value")
    check("Chromium: the page shows the API's tokens/s",
          tps is not None and abs(float(tps) - api_predict["tokens_per_s"]) <= 1e-6 * api_predict["tokens_per_s"],
          "DOM %r, API %r" % (tps, api_predict["tokens_per_s"]))
    sim = dom.by_id.get("sim_step_s", {}).get("data-value")
    check("Chromium: the page shows the simulated step (/api/trace)", bool(sim) and float(sim) > 0, "DOM %r" % sim)
    check("Chromium: screenshot of the prediction", os.path.getsize(shot) > 20000 if os.path.exists(shot) else False)

    q = "#predict?model=llama3-70b&gpu=h100-sxm5-80gb&gpus=64&plan=tp%3D3,gb%3D128"
    dom = browser(port, q, os.path.join(shots, "web-error.png"), 5000)
    check("Chromium: a plan that cannot be formed shows the API's message naming the field",
          dom.body.get("data-state") == "error" and "field: plan" in dom.text.get("status", ""),
          "body %r, status %r" % (dom.body, dom.text.get("status")))
    if os.path.exists(os.path.join(shots, "web-error.png")):
        os.unlink(os.path.join(shots, "web-error.png"))

    q = "#search?model=llama3-70b&gpu=h100-sxm5-80gb&gpus=64&gb=128&top=20"
    shot = os.path.join(shots, "web-search.png")
    dom = browser(port, q, shot, 15000)
    check("Chromium: the page ran the search from the URL", dom.body.get("data-state") == "searched",
          "body %r" % dom.body)
    best = dom.by_id.get("search_summary", {}).get("data-best", "")
    check("Chromium: the page shows the search's best plan", best.startswith("tp="), "best %r" % best)
    check("Chromium: screenshot of the search", os.path.getsize(shot) > 20000 if os.path.exists(shot) else False)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    mp = argv[1]
    tmp = tempfile.mkdtemp(prefix="meshplan-web.")
    shots = os.path.abspath(argv[2]) if len(argv) > 2 else tmp
    os.makedirs(shots, exist_ok=True)
    server, port = start_server(mp)
    try:
        api_checks(mp, port)
        api_predict = json.loads(request(port, "/api/predict", JOB)[2])
        try:
            browser_checks(port, shots, api_predict)
        except (subprocess.TimeoutExpired, TimeoutError) as e:
            check("Chromium within the time bound", False, str(e))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            rc = server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            rc = None
        shutil.rmtree(tmp, ignore_errors=True)
    check("the server stops on SIGTERM with status 0", rc == 0, "status %r" % rc)
    print("%d passed, %d failed%s" % (PASSED, FAILED, (", %d skipped" % SKIPPED) if SKIPPED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
