package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/server"
	"github.com/huitian/huitian/server/demo"
)

// browser finds headless Chromium: $HUITIAN_CHROMIUM, or chromium (Debian's
// package, which scripts/deps.sh installs) or another Chrome on PATH.
func browser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HUITIAN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the web page test needs headless Chromium: install Debian's chromium (scripts/deps.sh, run by `make test`, does), or set HUITIAN_CHROMIUM to a Chrome binary"
	if testing.Short() {
		t.Skip(msg)
	}
	t.Fatal(msg)
	return ""
}

// The page's formats, as app.js writes them (fmtDur, fmtPct).
func fmtDur(s float64) string {
	neg := ""
	if s < 0 {
		neg, s = "−", -s
	}
	if s < 60 {
		return neg + strconv.Itoa(int(math.Round(s))) + " s"
	}
	m := int(math.Round(s / 60))
	if m < 60 {
		return neg + strconv.Itoa(m) + " min"
	}
	return fmt.Sprintf("%s%d h %d min", neg, m/60, m%60)
}

func fmtPct(p float64) string { return strconv.FormatFloat(p*100, 'f', 1, 64) + " %" }

// console collects what the page must not write: uncaught exceptions,
// console.error and console.assert, and browser log errors (a refused
// script or style, a violated content policy). The API's 401 before the
// token is given is expected and not collected.
type console struct {
	mu   sync.Mutex
	errs []string
}

func (c *console) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		msg = "console." + string(e.Type) + ":"
		for _, a := range e.Args {
			msg += " " + string(a.Value) + a.Description
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceNetwork && strings.Contains(e.Entry.Text, "401") {
			return
		}
		msg = "log " + string(e.Entry.Source) + ": " + e.Entry.Text + " " + e.Entry.URL
	default:
		return
	}
	c.mu.Lock()
	c.errs = append(c.errs, msg)
	c.mu.Unlock()
}

func (c *console) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// pageText is what the page shows, for a failure's message.
func pageText(ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[string](`location.href + " | " + document.body.innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return v
}

// TestWebPageInBrowser serves the demo cluster with a token, opens the page
// in headless Chromium, gives the token, watches the card grid follow the
// plans, opens a backfill job from the grid and checks that the retention
// and the preemption probability it shows are GetJobInsight's. The page
// must write no console error. Screenshots of both pages go to
// $HUITIAN_SCREENSHOT_DIR (or the test's temporary folder).
func TestWebPageInBrowser(t *testing.T) {
	chrome := browser(t)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	shots := os.Getenv("HUITIAN_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}

	// 1. The service, with a token, and the demo resource manager, stepped
	// by the test so that the plans change when the test says.
	const token = "web-test-token"
	tokFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := server.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.TokenFile = tokFile
	srv, err := server.New(cfg, server.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, server.ServeOptions{}) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	url := "http://" + ln.Addr().String()
	api := client.New(url, client.WithToken(token))

	cluster := demo.Cluster()
	cid := cluster.GetId()
	rm := demo.New(api, cluster, demo.Start, demo.Options{Policy: pb.Policy_POLICY_HUITIAN, Log: discard})
	ctx := context.Background()
	step := func(n int) {
		t.Helper()
		for range n {
			if err := rm.Step(ctx); err != nil {
				t.Fatalf("demo cycle: %v", err)
			}
		}
	}
	step(1)

	// 2. The browser, with everything the page writes to its console.
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // tests run as root in containers, where Chromium's sandbox cannot start
		chromedp.WindowSize(1400, 1000),
	)...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	var cons console
	if err := chromedp.Listen(bctx, cons.listen); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			t.Fatalf("%s: %v (console: %q; the page says: %q)", what, err, cons.errors(), pageText(bctx))
		}
	}
	eval := func(what, js string) string {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	screenshot := func(name string) {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		p := filepath.Join(shots, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	planTime := func() string {
		t.Helper()
		st, err := api.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: cid}))
		if err != nil {
			t.Fatal(err)
		}
		return st.Msg.GetLastPlanTime().AsTime().Format(time.RFC3339)
	}
	// showing waits until the page shows the plan of time pt.
	showing := func(pt string) {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		js := fmt.Sprintf(`(document.getElementById("main").dataset.planTime || "").startsWith(%q.slice(0, 19))`, pt)
		if _, err := chromedp.Run(c, chromedp.Poll[bool](js)); err != nil {
			t.Fatalf("the page does not show the plan of %s: %v (console: %q)", pt, err, cons.errors())
		}
	}

	// 3. The page asks for the token, and then draws every card.
	run("open the page and give the token",
		chromedp.Navigate(url+"/?cluster="+cid),
		chromedp.WaitVisible(chromedp.CSS("#token-form")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS("#token-form button")),
		chromedp.WaitVisible(chromedp.CSS("#grid")),
	)
	showing(planTime())
	st, err := api.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: cid, IncludeCards: true}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := eval("count cards", `String(document.querySelectorAll("#grid .card").length)`), strconv.Itoa(len(st.Msg.GetCards())); got != want || want == "0" {
		t.Fatalf("the grid draws %s cards, GetStatus lists %s", got, want)
	}

	// 4. Live: each batch of cycles reaches the page, until a backfill job
	// runs whose cards a reservation claims (so that its retention is a
	// duration; any backfill job after 40 batches), and at least a few
	// batches, so that the measures have a history to draw.
	backfill := func() (some, claimed bool) {
		t.Helper()
		resp, err := api.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: cid, Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL,
			States: []pb.JobState{pb.JobState_JOB_STATE_RUNNING, pb.JobState_JOB_STATE_STARTING}}))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range resp.Msg.GetJobs() {
			some = true
			claimed = claimed || !j.GetRetentionUnbounded() && j.GetExpectedRetention() != nil
		}
		return some, claimed
	}
	for batch := 0; ; batch++ {
		if some, claimed := backfill(); batch >= 6 && (claimed || some && batch >= 40) {
			break
		}
		if batch == 80 {
			t.Fatal("no backfill job runs after 80 batches of demo cycles")
		}
		step(3)
		showing(planTime())
	}
	run("a backfill card", chromedp.WaitVisible(chromedp.CSS("#grid a.card.c-backfill")))
	screenshot("huitian-cluster.png")

	// 5. Find the backfill jobs on the grid (one whose retention is a
	// duration first) and open it: the page shows the contract, and its
	// retention and probability are GetJobInsight's.
	c, cancel := context.WithTimeout(bctx, 30*time.Second)
	onGrid, err := chromedp.Run(c, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#grid a.card.c-backfill")].map((a) => a.dataset.job)`))
	cancel()
	if err != nil || len(onGrid) == 0 {
		t.Fatalf("backfill cards on the grid: %v, %v", onGrid, err)
	}
	id := onGrid[0]
	for _, j := range onGrid {
		in, err := api.GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: cid, JobId: j}))
		if err != nil {
			t.Fatal(err)
		}
		if !in.Msg.GetInsight().GetRetentionUnbounded() {
			id = j
			break
		}
	}
	run("open "+id,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#grid a.card.c-backfill[data-job=%q]`, id))),
		chromedp.WaitVisible(chromedp.CSS("#job-retention")),
	)
	if got := eval("location", `location.pathname`); got != "/jobs/"+id {
		t.Errorf("after the click the page is %s, want /jobs/%s", got, id)
	}
	in, err := api.GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: cid, JobId: id}))
	if err != nil {
		t.Fatal(err)
	}
	ji := in.Msg.GetInsight()
	if ji.GetKind() != pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		t.Fatalf("%s is %v by GetJobInsight, want backfill", id, ji.GetKind())
	}
	wantRet := fmtDur(ji.GetExpectedRetention().AsDuration().Seconds())
	if ji.GetRetentionUnbounded() {
		wantRet = "until it ends"
	}
	text := func(sel string) string { return eval(sel, fmt.Sprintf(`document.querySelector(%q).textContent`, sel)) }
	if got := text("#job-id"); got != id {
		t.Errorf("job page names %q, want %q", got, id)
	}
	if got := text("#job-kind"); got != "backfill" {
		t.Errorf("terms shown %q, want backfill", got)
	}
	if got := text("#job-retention"); got != wantRet {
		t.Errorf("retention shown %q, GetJobInsight's is %q (%v, unbounded %v)", got, wantRet, ji.GetExpectedRetention().AsDuration(), ji.GetRetentionUnbounded())
	}
	if got, want := text("#job-probability"), fmtPct(ji.GetPreemptionProbability()); got != want {
		t.Errorf("preemption probability shown %q, GetJobInsight's is %q (%v)", got, want, ji.GetPreemptionProbability())
	}
	if got := text("#job-contract"); !strings.Contains(got, fmtPct(ji.GetPreemptionProbability())+" chance of preemption") {
		t.Errorf("the contract sentence %q does not state the probability", got)
	}
	t.Logf("%s: %s", id, text("#job-contract"))
	screenshot("huitian-job.png")

	// 6. Back to the cluster: the queue lists the waiting jobs with their
	// positions.
	run("back to the cluster",
		chromedp.NavigateBack(),
		chromedp.WaitVisible(chromedp.CSS("#queue-panel")),
	)
	waiting, err := api.ListJobs(ctx, connect.NewRequest(&pb.ListJobsRequest{ClusterId: cid,
		States: []pb.JobState{pb.JobState_JOB_STATE_PENDING, pb.JobState_JOB_STATE_RESERVED}}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := eval("queue rows", `String(document.querySelectorAll("#queue-panel tbody tr").length)`), strconv.Itoa(len(waiting.Msg.GetJobs())); got != want {
		t.Errorf("the queue shows %s jobs, ListJobs %s", got, want)
	}
	if errs := cons.errors(); len(errs) > 0 {
		t.Errorf("the page wrote %d console errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}
