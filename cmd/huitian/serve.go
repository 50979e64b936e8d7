package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/server"
	"github.com/huitian/huitian/server/demo"
)

func newServeCmd() *cobra.Command {
	cfg := server.Defaults()
	cfg.DefaultPolicy = model.PolicyHuitian // the planner this service is for; server.Defaults keeps EASY for embedders
	var (
		listen, policy, logFormat, logLevel string
		tlsCert, tlsKey                     string
		runDemo, insecure                   bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve PlannerService over Connect, gRPC and gRPC-Web on one port",
		Long: `Serve runs the planning service: PlannerService (Plan, ReportEvents,
GetJobInsight, ListJobs, WhatIf, GetStatus) over Connect, gRPC and
gRPC-Web on one port (HTTP/1.1 and unencrypted HTTP/2, or TLS with
--tls-cert/--tls-key), plus gRPC health, gRPC reflection and Prometheus
/metrics.

Requests that leave the policy unspecified are planned with
--default-policy: huitian unless told otherwise (EASY's own decision, then
backfill of what EASY leaves idle, with suspension and requeue when a
reservation comes due).

Events and the last plans are stored under --data (bbolt, fsync'd before
ReportEvents answers). SIGTERM or SIGINT drains in-flight calls, flushes
the store and exits 0.

With --demo, a built-in resource manager drives the embedded demo cluster
through the real RPC path, so that /metrics, GetStatus and GetJobInsight
show live answers, and tells on standard output, one line each, what an
operator would want to see as it happens: reservations, reserved jobs
starting, backfill on each class of idle cards, suspensions and requeues
with their notice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd.ErrOrStderr(), logFormat, logLevel)
			if err != nil {
				return exitWith(2, err)
			}
			p, ok := model.ParsePolicy(policy)
			if !ok || p == model.PolicyDefault {
				return exitWith(2, fmt.Errorf("--default-policy: unknown policy %q (want one of %s)", policy, strings.Join(policyNames(), ", ")))
			}
			cfg.DefaultPolicy = p
			if (tlsCert == "") != (tlsKey == "") {
				return exitWith(2, errors.New("give both --tls-cert and --tls-key, or neither"))
			}
			if err := cfg.Validate(); err != nil {
				return exitWith(2, err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			addr := ln.Addr().String()
			if missing := offLoopbackMissing(ln.Addr(), cfg.TokenFile != "", tlsCert != ""); missing != "" {
				if !insecure {
					ln.Close()
					return exitWith(2, fmt.Errorf("refusing to serve on %s, off loopback, without %s: anyone who can reach it could read and "+
						"overwrite every cluster's plans and events; give %[2]s, or --insecure to serve so anyway", addr, missing))
				}
				log.Warn("--insecure: serving off loopback without "+missing+": anyone who can reach it can plan, read and report events",
					"address", addr)
			}
			srv, err := server.New(cfg, server.WithLogger(log))
			if err != nil {
				ln.Close()
				return err
			}
			scheme := "http"
			if tlsCert != "" {
				scheme = "https"
			}
			url := scheme + "://" + addr
			// The one line scripts and tests parse for the bound address.
			fmt.Fprintf(cmd.OutOrStdout(), "huitian serve: listening on %s\n", url)
			// The web page (server/web); with --demo it opens on the demo cluster.
			page := url + "/"
			if runDemo {
				page += "?cluster=" + demo.Cluster().GetId()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "huitian serve: web page at %s\n", page)

			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if runDemo {
				if err := startDemo(ctx, cmd.OutOrStdout(), log, url, cfg.TokenFile); err != nil {
					ln.Close()
					srv.Close()
					return err
				}
			}
			return srv.Serve(ctx, ln, server.ServeOptions{TLSCertFile: tlsCert, TLSKeyFile: tlsKey})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:7070", "address to listen on (port 0 picks a free port)")
	f.StringVar(&cfg.DataDir, "data", cfg.DataDir, "folder for the store (huitian.db) and what-if traces (traces/)")
	f.StringVar(&policy, "default-policy", cfg.DefaultPolicy.String(), "policy for requests that leave it unspecified: "+strings.Join(policyNames(), ", "))
	f.IntVar(&cfg.MaxRequestBytes, "max-request-bytes", cfg.MaxRequestBytes, "largest request message accepted, in bytes")
	f.IntVar(&cfg.MaxCards, "max-cards", cfg.MaxCards, "most cards in one request's cluster")
	f.IntVar(&cfg.MaxJobs, "max-jobs", cfg.MaxJobs, "most running plus queued jobs in one Plan request")
	f.IntVar(&cfg.MaxDomains, "max-domains", cfg.MaxDomains, "most interconnect domains in one request's cluster")
	f.IntVar(&cfg.MaxEvents, "max-events", cfg.MaxEvents, "most events in one ReportEvents request")
	f.DurationVar(&cfg.DefaultTimeBudget, "time-budget", cfg.DefaultTimeBudget, "solver time budget when a request gives none")
	f.DurationVar(&cfg.MaxTimeBudget, "max-time-budget", cfg.MaxTimeBudget, "largest time budget a request may ask for")
	f.Int64Var(&cfg.InsightCacheEntries, "insight-cache", cfg.InsightCacheEntries, "entries in the hot job-insight cache")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a stop waits for in-flight calls")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file of bearer tokens, one a line, each optionally followed by the cluster ids it may use (none or *: all); every call except health must carry one")
	f.IntVar(&cfg.MaxClusterLabels, "max-cluster-labels", cfg.MaxClusterLabels, "most clusters with per-cluster series in /metrics")
	f.DurationVar(&cfg.Retention.Retain, "retain", cfg.Retention.Retain, "how long (in each cluster's time) the store keeps finished jobs' states and the events of clusters no learning planner (huitian) has planned; 0 keeps everything. The planners' learning history is always kept")
	f.IntVar(&cfg.Retention.Plans, "retain-plans", cfg.Retention.Plans, "whole decision records the store keeps per cluster (huitian store dump); older decisions keep only what the planner learns from")
	f.Float64Var(&cfg.Retention.CompactFree, "compact-free", cfg.Retention.CompactFree, "at start, compact the store into a new file when free pages are at least this share of it (and it is 16 MiB or more); 0 never")
	f.StringVar(&tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve TLS")
	f.StringVar(&tlsKey, "tls-key", "", "TLS private key file (PEM)")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.BoolVar(&runDemo, "demo", false, "drive the embedded demo cluster with a built-in resource manager")
	f.BoolVar(&insecure, "insecure", false, "serve off loopback without a token or without TLS (refused otherwise): anyone on the network can then read and forge plans and events")
	f.DurationVar(&cfg.BodyTimeout, "body-timeout", cfg.BodyTimeout, "longest a call may take to send its request body")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "longest a keep-alive connection may sit idle")
	f.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "most open connections; more wait to be accepted")
	return cmd
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, got %q", format)
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// offLoopbackMissing says what a listener off loopback lacks ("a token
// (--token-file)", "TLS (--tls-cert, --tls-key)", or both), or "".
func offLoopbackMissing(a net.Addr, token, tls bool) string {
	if isLoopback(a) {
		return ""
	}
	var missing []string
	if !token {
		missing = append(missing, "a token (--token-file)")
	}
	if !tls {
		missing = append(missing, "TLS (--tls-cert, --tls-key)")
	}
	return strings.Join(missing, " and ")
}

// startDemo starts the demo resource manager on the demo cluster (the
// embedded example's) and prints the commands to try; the demo then tells
// what happens on out.
func startDemo(ctx context.Context, out io.Writer, log *slog.Logger, url, tokenFile string) error {
	var opts []client.Option
	auth, userAuth := "", ""
	if tokenFile != "" {
		tok, err := firstToken(tokenFile)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		opts = append(opts, client.WithToken(tok))
		auth = fmt.Sprintf(" -H \"Authorization: Bearer $(head -n1 %s)\"", tokenFile)
		userAuth = " --token-file " + tokenFile
	}
	cluster := demo.Cluster()
	rm := demo.New(client.New(url, opts...), cluster, demo.Start, demo.Options{Log: log, Out: out})
	cid := cluster.GetId()
	fmt.Fprintf(out, `huitian serve: demo resource manager driving cluster %q (1 s real time = 5 min simulated)
try, in another terminal (from the repository root):
  ./bin/huitian jobs --server %[2]s --cluster %[4]s%[7]s
  ./bin/huitian job --server %[2]s --cluster %[4]s%[7]s %[5]s
  curl -s -X POST %[2]s/huitian.v1.PlannerService/GetStatus -H 'Content-Type: application/json'%[3]s -d '{"clusterId":"%[4]s"}'
  curl -s -X POST %[2]s/huitian.v1.PlannerService/GetJobInsight -H 'Content-Type: application/json'%[3]s -d '{"clusterId":"%[4]s","jobId":"%[5]s"}'
  go tool buf curl --protocol grpc --http2-prior-knowledge --schema proto%[6]s -d '{"clusterId":"%[4]s","jobId":"%[5]s"}' %[2]s/huitian.v1.PlannerService/GetJobInsight
  go tool buf curl --protocol connect --http2-prior-knowledge%[6]s -d '{"clusterId":"%[4]s"}' %[2]s/huitian.v1.PlannerService/GetStatus
  curl -s%[3]s %[2]s/metrics | grep '^huitian_'
stop with Ctrl-C (the service drains and exits 0)
what happens, as it happens (simulated time):
`, cid, url, auth, cid, demo.FirstJobID, auth, userAuth)
	go rm.Run(ctx)
	return nil
}
