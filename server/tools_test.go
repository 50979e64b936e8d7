package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// These tests start the real binary and talk to it with real clients:
// curl (Connect's JSON), buf curl (Connect and gRPC, with the schema from
// proto/ and from reflection), and a Python gRPC client.

func run(t *testing.T, dir string, stdin []byte, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func TestRealClients(t *testing.T) {
	srv := serveChild(t, "--data", t.TempDir())
	body, err := protojson.Marshal(planRequest("tools", 4))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("curl with Connect's JSON", func(t *testing.T) {
		curl := needTool(t, "curl")
		out, err := run(t, ".", body, curl, "-sS", "--fail-with-body", "-X", "POST",
			"-H", "Content-Type: application/json", "--data-binary", "@-", srv.URL+"/huitian.v1.PlannerService/Plan")
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		resp := &pb.PlanResponse{}
		if err := protojson.Unmarshal([]byte(out), resp); err != nil {
			t.Fatalf("response %q: %v", out, err)
		}
		if len(resp.GetStarts()) == 0 || len(resp.GetReservations()) == 0 {
			t.Errorf("want starts and a reservation, got %s", out)
		}
		// An invalid request: HTTP 400 with Connect's error JSON, naming the field.
		out, err = run(t, ".", nil, curl, "-sS", "-w", "\n%{http_code}", "-X", "POST",
			"-H", "Content-Type: application/json", "-d", `{"clusterId":"tools"}`, srv.URL+"/huitian.v1.PlannerService/GetJobInsight")
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		if !strings.HasSuffix(out, "\n400") || !strings.Contains(out, `"invalid_argument"`) || !strings.Contains(out, "job_id") {
			t.Errorf("invalid request: got %s, want 400 invalid_argument naming job_id", out)
		}
	})

	for _, proto := range []string{"connect", "grpc"} {
		t.Run("buf curl "+proto+" with the schema from proto/", func(t *testing.T) {
			out, err := run(t, repoRoot, body, "go", "tool", "buf", "curl", "--protocol", proto, "--http2-prior-knowledge",
				"--schema", "proto", "-d", "@-", srv.URL+"/huitian.v1.PlannerService/Plan")
			if err != nil {
				t.Fatalf("buf curl: %v\n%s", err, out)
			}
			resp := &pb.PlanResponse{}
			if err := protojson.Unmarshal([]byte(out), resp); err != nil {
				t.Fatalf("response %q: %v", out, err)
			}
			if len(resp.GetStarts()) == 0 {
				t.Errorf("no starts in %s", out)
			}
		})
	}

	t.Run("buf curl grpc with the schema from reflection", func(t *testing.T) {
		out, err := run(t, repoRoot, nil, "go", "tool", "buf", "curl", "--protocol", "grpc", "--http2-prior-knowledge",
			"-d", `{"clusterId":"tools","jobId":"short"}`, srv.URL+"/huitian.v1.PlannerService/GetJobInsight")
		if err != nil {
			t.Fatalf("buf curl: %v\n%s", err, out)
		}
		var got struct {
			Insight struct{ JobID, State string }
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("response %q: %v", out, err)
		}
		if got.Insight.State == "" {
			t.Errorf("no state in %s", out)
		}
	})

	t.Run("python grpc client", func(t *testing.T) {
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			t.Fatalf("%s is not installed: run `make deps` (scripts/deps.sh installs python3-grpcio, python3-grpc-tools and python3-protobuf)", py)
		}
		if out, err := run(t, ".", nil, py, "-c", "import grpc, grpc_tools.protoc, google.protobuf"); err != nil {
			t.Fatalf("Debian's Python gRPC packages are missing: run `make deps` (scripts/deps.sh installs python3-grpcio, python3-grpc-tools and python3-protobuf)\n%s", out)
		}
		root, err := filepath.Abs(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		out, err := run(t, ".", nil, py, filepath.Join(root, "test", "python", "client.py"), srv.Addr, root)
		if err != nil || !strings.Contains(out, "python client: ok") {
			t.Fatalf("python client: %v\n%s", err, out)
		}
		t.Log(out)
	})
}

func TestTokenGuardsAllButHealth(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := start(t, func(c *Config) { c.TokenFile = tokenFile })
	ctx := context.Background()
	for _, p := range []client.Protocol{client.Connect, client.GRPC, client.GRPCWeb} {
		_, err := ts.client(client.WithProtocol(p)).Plan(ctx, connect.NewRequest(planRequest("c1", 2)))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("protocol %d without a token: got %v, want Unauthenticated", p, err)
		}
		_, err = ts.client(client.WithProtocol(p), client.WithToken("wrong")).Plan(ctx, connect.NewRequest(planRequest("c1", 2)))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("protocol %d with a wrong token: got %v, want Unauthenticated", p, err)
		}
		if _, err := ts.client(client.WithProtocol(p), client.WithToken("s3cret-token")).Plan(ctx, connect.NewRequest(planRequest("c1", 2))); err != nil {
			t.Errorf("protocol %d with the token: %v", p, err)
		}
	}
	hc := grpchealth.NewClient(client.NewHTTPClient(false, nil), ts.URL, connect.WithGRPC())
	resp, err := hc.Check(ctx, &grpchealth.CheckRequest{Service: "huitian.v1.PlannerService"})
	if err != nil || resp.Status != grpchealth.StatusServing {
		t.Errorf("health without a token: %v %v, want SERVING", resp, err)
	}
	r, err := client.NewHTTPClient(false, nil).Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 {
		t.Errorf("/metrics without a token: %d, want 401", r.StatusCode)
	}
}
