package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
)

// driverFlags are the flags every resource-manager driver command (huitian
// kube, huitian slurm) shares: where the service is, how often and with
// which policy to plan, and the log. check turns them into what run needs.
type driverFlags struct {
	server, tokenFile, policy string
	logFormat, logLevel       string
	interval                  time.Duration
	depth                     int32

	log  *slog.Logger
	plan *pb.PlanOptions // nil: the service's default policy
	opts []client.Option
}

// register adds the service and planning flags; registerLog the log's,
// last in the help.
func (f *driverFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", "http://127.0.0.1:7070", "huitian serve's address")
	fs.StringVar(&f.tokenFile, "token-file", "", "file whose first token is sent to huitian serve as the bearer token (read as the service reads its token file)")
	fs.DurationVar(&f.interval, "interval", 10*time.Second, "longest time between scheduling cycles (sooner when a plan asks by replan_by, or a preemption's notice runs out)")
	fs.StringVar(&f.policy, "policy", "", "planning policy (default: the service's --default-policy): "+strings.Join(policyNames(), ", "))
	fs.Int32Var(&f.depth, "reservation-depth", 0, "reservation depth for the hybrid policy")
}

func (f *driverFlags) registerLog(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

// check validates the flags and reads the token: bad ones exit with
// status 2, naming the flag.
func (f *driverFlags) check(cmd *cobra.Command) error {
	log, err := newLogger(cmd.ErrOrStderr(), f.logFormat, f.logLevel)
	if err != nil {
		return exitWith(2, err)
	}
	f.log = log
	if f.policy != "" {
		p, ok := model.ParsePolicy(f.policy)
		if !ok || p == model.PolicyDefault {
			return exitWith(2, fmt.Errorf("--policy: unknown policy %q (want one of %s)", f.policy, strings.Join(policyNames(), ", ")))
		}
		f.plan = &pb.PlanOptions{Policy: wirePolicy(p), ReservationDepth: f.depth}
	}
	if f.interval <= 0 {
		return exitWith(2, errors.New("--interval: must be > 0"))
	}
	if f.tokenFile != "" {
		tok, err := firstToken(f.tokenFile)
		if err != nil {
			return exitWith(2, fmt.Errorf("--token-file: %w", err))
		}
		f.opts = append(f.opts, client.WithToken(tok))
	}
	return nil
}

// signalContext is the command's context, cancelled on SIGTERM or SIGINT.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
}

// run runs the resource-manager loop over d until ctx ends.
func (f *driverFlags) run(ctx context.Context, d rm.Driver) error {
	return rm.New(client.New(f.server, f.opts...), d, rm.Options{Interval: f.interval, Plan: f.plan, Log: f.log}).Run(ctx)
}

// wirePolicy is the API's name for a policy.
func wirePolicy(p model.Policy) pb.Policy {
	for v := range pb.Policy_name {
		if wire.Policy(pb.Policy(v)) == p {
			return pb.Policy(v)
		}
	}
	return pb.Policy_POLICY_UNSPECIFIED
}
