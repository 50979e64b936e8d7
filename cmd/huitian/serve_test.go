package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesOffLoopbackWithoutTokenAndTLS: huitian serve on a
// non-loopback address without a token, or with a token but without TLS,
// refuses to start and names --insecure; with --insecure it serves. Before
// the fix it only warned (without a token) or said nothing (with a token,
// without TLS) and served.
func TestServeRefusesOffLoopbackWithoutTokenAndTLS(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(args ...string) error {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"serve", "--data", t.TempDir(), "--log-level", "error"}, args...))
		// A context already done: a server that starts drains at once and
		// returns nil, so a refusal is the only error.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return root.ExecuteContext(ctx)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no token, no TLS", []string{"--listen", "0.0.0.0:0"}, "without a token (--token-file) and TLS"},
		{"token, no TLS", []string{"--listen", "0.0.0.0:0", "--token-file", token}, "without TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := serve(c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--insecure") {
				t.Errorf("serve %v: %v; want a refusal naming what is missing and --insecure", c.args, err)
			}
			if err := serve(append(c.args, "--insecure")...); err != nil {
				t.Errorf("serve %v --insecure: %v, want it to serve", c.args, err)
			}
		})
	}
	if err := serve("--listen", "127.0.0.1:0"); err != nil {
		t.Errorf("serve on loopback: %v", err)
	}
}

// TestServeDefaultPolicyIsHuitian: huitian serve plans requests that leave
// the policy unspecified with huitian, and says so in its help.
func TestServeDefaultPolicyIsHuitian(t *testing.T) {
	f := newServeCmd().Flags().Lookup("default-policy")
	if f == nil || f.DefValue != "huitian" {
		t.Fatalf("--default-policy defaults to %v, want huitian", f)
	}
	if !strings.Contains(newServeCmd().Long, "--default-policy: huitian") {
		t.Error("serve's help does not say that huitian is the default policy")
	}
}
