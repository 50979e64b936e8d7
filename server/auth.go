package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/huitian/huitian/internal/wire"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// tokenScope is one bearer token and the clusters it may use: all of them
// (all) or those named.
type tokenScope struct {
	token    []byte
	all      bool
	clusters map[string]bool
}

// allows says whether the token may use the cluster.
func (t *tokenScope) allows(cluster string) bool { return t.all || t.clusters[cluster] }

// readTokens reads a token file: one token a line, optionally followed by
// the cluster ids it may use ("*" or nothing: every cluster); blank lines
// and lines starting with '#' are skipped.
func readTokens(path string) ([]*tokenScope, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	var out []*tokenScope
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if prev, dup := seen[fields[0]]; dup {
			return nil, fmt.Errorf("token file %s: line %d repeats the token of line %d", path, n, prev)
		}
		seen[fields[0]] = n
		t := &tokenScope{token: []byte(fields[0]), all: len(fields) == 1, clusters: map[string]bool{}}
		for _, c := range fields[1:] {
			if c == "*" {
				t.all = true
				continue
			}
			if why := wire.ValidID(c); why != "" {
				return nil, fmt.Errorf("token file %s: line %d: cluster id %q %s", path, n, logID(c), why)
			}
			t.clusters[c] = true
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("token file %s: no token in it", path)
	}
	return out, nil
}

// scopeKey carries the caller's *tokenScope in a call's context.
type scopeKey struct{}

// match finds the scope of a presented token, comparing in constant time
// against every token.
func (s *Server) match(got string) *tokenScope {
	var found *tokenScope
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare([]byte(got), t.token) == 1 {
			found = t
		}
	}
	return found
}

// requestCluster is the cluster id a request names, if any (WhatIf names
// none: it simulates, and touches no cluster's state).
func requestCluster(m proto.Message) (string, bool) {
	switch r := m.(type) {
	case *pb.PlanRequest:
		return r.GetCluster().GetId(), true
	case *pb.ReportEventsRequest:
		return r.GetClusterId(), true
	case *pb.GetJobInsightRequest:
		return r.GetClusterId(), true
	case *pb.ListJobsRequest:
		return r.GetClusterId(), true
	case *pb.GetStatusRequest:
		return r.GetClusterId(), true
	}
	return "", false
}

// authorize checks the request's cluster against the caller's token
// scope: PermissionDenied when the token may not use it.
func authorize(ctx context.Context, m proto.Message) error {
	sc, _ := ctx.Value(scopeKey{}).(*tokenScope)
	if sc == nil || sc.all {
		return nil
	}
	id, ok := requestCluster(m)
	if !ok || sc.allows(id) {
		return nil
	}
	return connect.NewError(connect.CodePermissionDenied, errors.New("this token may not use cluster "+fmt.Sprintf("%q", logID(id))))
}
