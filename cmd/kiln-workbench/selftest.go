package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// selfTestTopic is the topic of the event the self-test asks Go to send.
const selfTestTopic = "selftest"

// SelfTest is bound into the page as window.go.main.SelfTest, only in
// --self-test mode. The script from selfTestScript calls Ping (Go answers
// with a "workbench" event carrying the nonce) and finally Report with what
// it saw; wait then gives the verdict.
type SelfTest struct {
	nonce   string // the random value the event must carry back
	unknown string // a method name the engine cannot know
	pub     *publisher

	once sync.Once
	done chan verdict
}

// verdict is the outcome of the self-test.
type verdict struct {
	ok      bool
	reasons []string // why it failed
	summary string   // what was seen, for the log
}

// newSelfTest returns a self-test whose events go through pub.
func newSelfTest(pub *publisher) (*SelfTest, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("self-test nonce: %w", err)
	}
	n := hex.EncodeToString(b)
	return &SelfTest{
		nonce:   n,
		unknown: "selftest.no_such_method_" + n[:8],
		pub:     pub,
		done:    make(chan verdict, 1),
	}, nil
}

// Ping publishes a "workbench" event with topic "selftest" carrying nonce,
// through the same publisher (and Wails emitter) as the engine's updates.
func (s *SelfTest) Ping(nonce string) {
	s.pub.Publish(selfTestTopic, map[string]string{"nonce": nonce})
}

// Report receives the page's findings (JSON, see selfTestReport) and
// settles the verdict; only the first report counts.
func (s *SelfTest) Report(reportJSON string) {
	s.settle(judge([]byte(reportJSON), s.nonce, s.unknown))
}

func (s *SelfTest) settle(v verdict) {
	s.once.Do(func() { s.done <- v })
}

// wait returns the verdict, or a failure once timeout passes without one.
func (s *SelfTest) wait(timeout time.Duration) verdict {
	select {
	case v := <-s.done:
		return v
	case <-time.After(timeout):
		v := verdict{reasons: []string{fmt.Sprintf("the page sent no report within %v", timeout)}}
		s.settle(v)
		return v
	}
}

// selfTestReport is what the page's script found.
type selfTestReport struct {
	Info         map[string]any  `json:"info"`
	Devices      json.RawMessage `json:"devices"`
	DevicesError string          `json:"devicesError"`
	UnknownError *string         `json:"unknownError"` // nil: the unknown method was accepted
	Nonce        string          `json:"nonce"`
	UI           string          `json:"ui"`
	Errors       []string        `json:"errors"`
}

// judge checks the page's report: server.info answered with a version,
// devices.list listed named devices from the kernel, the unknown method was
// rejected with a message naming it, the event came back with the nonce,
// and the UI's own script ran (or the placeholder page is shown).
func judge(report []byte, nonce, unknown string) verdict {
	var r selfTestReport
	if err := json.Unmarshal(report, &r); err != nil {
		return verdict{reasons: []string{"the page's report is not valid JSON: " + err.Error()}}
	}
	var why, seen []string
	why = append(why, r.Errors...)

	if v, _ := r.Info["version"].(string); v == "" {
		why = append(why, "server.info returned no version")
	} else {
		seen = append(seen, "version "+v)
	}

	var devs struct {
		Devices []struct {
			Name string `json:"name"`
		} `json:"devices"`
	}
	switch {
	case len(r.Devices) == 0 || string(r.Devices) == "null":
		why = append(why, "devices.list failed: "+orNone(r.DevicesError))
	case json.Unmarshal(r.Devices, &devs) != nil:
		why = append(why, "devices.list returned "+string(r.Devices)+", not {devices: [...]}")
	case len(devs.Devices) == 0:
		why = append(why, "devices.list returned no devices")
	default:
		var names []string
		for _, d := range devs.Devices {
			if d.Name == "" {
				why = append(why, "devices.list returned a device without a name")
			}
			names = append(names, d.Name)
		}
		seen = append(seen, "devices "+strings.Join(names, ","))
	}

	switch {
	case r.UnknownError == nil:
		why = append(why, "the unknown method "+unknown+" was accepted")
	case !strings.Contains(*r.UnknownError, unknown):
		why = append(why, fmt.Sprintf("the unknown method was rejected with %q, which does not name it", *r.UnknownError))
	default:
		seen = append(seen, "unknown method rejected")
	}

	if r.Nonce != nonce {
		why = append(why, fmt.Sprintf("the event came back with nonce %q, want %q", r.Nonce, nonce))
	} else {
		seen = append(seen, "event received")
	}

	switch {
	case strings.HasPrefix(r.UI, "kernel-status:"):
		seen = append(seen, "UI "+r.UI)
	case r.UI == "placeholder":
		seen = append(seen, "placeholder page")
	default:
		why = append(why, "the UI's script did not run: no #kernel-status[data-status] and no #placeholder")
	}
	return verdict{ok: len(why) == 0, reasons: why, summary: strings.Join(seen, "; ")}
}

func orNone(s string) string {
	if s == "" {
		return "no answer"
	}
	return s
}

// scriptBudget is how long the page's script may take: less than the Go
// side's timeout, so that its report (with what failed) arrives first.
func scriptBudget(timeout time.Duration) time.Duration {
	if timeout > 20*time.Second {
		return timeout - 5*time.Second
	}
	return timeout * 3 / 4
}

// script returns the JavaScript the self-test runs in the page.
// Each step is bounded by timeoutMs, so a report always comes back.
func (s *SelfTest) script(timeoutMs int64) string {
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	return fmt.Sprintf(selfTestJS, q(s.nonce), q(s.unknown), q(eventName), q(selfTestTopic), timeoutMs)
}

const selfTestJS = `(async () => {
  const NONCE = %s, UNKNOWN = %s, EVENT = %s, TOPIC = %s, deadline = Date.now() + %d;
  const sleep = ms => new Promise(res => setTimeout(res, ms));
  const msg = e => String((e && e.message) || e);
  const r = {errors: []};
  while (!(window.go && window.go.main && window.go.main.App && window.go.main.SelfTest && window.runtime)) {
    if (Date.now() > deadline) { return; }
    await sleep(50);
  }
  const App = window.go.main.App, ST = window.go.main.SelfTest;
  try {
    const got = new Promise(res => window.runtime.EventsOn(EVENT, ev => {
      if (ev && ev.topic === TOPIC && ev.data && ev.data.nonce === NONCE) res(ev.data.nonce);
    }));
    r.info = JSON.parse(await App.Call("server.info", "{}"));
    for (;;) {
      try { r.devices = JSON.parse(await App.Call("devices.list", "{}")); break; }
      catch (e) { r.devicesError = msg(e); if (Date.now() > deadline) break; await sleep(500); }
    }
    r.unknownError = null;
    try { await App.Call(UNKNOWN, "{}"); } catch (e) { r.unknownError = msg(e); }
    await ST.Ping(NONCE);
    r.nonce = await Promise.race([got, sleep(10000).then(() => "")]);
    r.ui = "";
    let settle = Date.now() + 15000;
    for (;;) {
      const ks = document.querySelector("#kernel-status[data-status]");
      const st = ks && ks.getAttribute("data-status");
      if (ks && (st === "idle" || Date.now() > settle || Date.now() > deadline)) { r.ui = "kernel-status:" + st; break; }
      if (!ks && document.getElementById("placeholder")) { r.ui = "placeholder"; break; }
      if (Date.now() > deadline) break;
      await sleep(200);
    }
  } catch (e) { r.errors.push("self-test script: " + msg(e)); }
  await ST.Report(JSON.stringify(r));
})();`
