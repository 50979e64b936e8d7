package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

//go:embed examples/snapshot.json
var exampleSnapshot []byte

func newPlanCmd() *cobra.Command {
	var (
		snapshot string
		example  bool
		policy   string
		format   string
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan one cycle for a snapshot (a PlanRequest in protojson)",
		Long: `Plan reads a PlanRequest in protojson (--snapshot FILE, or - for stdin,
or --example for the embedded demo cluster) and prints the PlanResponse:
protojson by default, or a readable table with --format table.

Bad input exits with status 2 and lists every violation on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw []byte
			switch {
			case example && snapshot != "":
				return exitWith(2, errors.New("give --snapshot or --example, not both"))
			case example:
				raw = exampleSnapshot
			case snapshot == "-":
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return exitWith(2, fmt.Errorf("read stdin: %w", err))
				}
				raw = b
			case snapshot != "":
				b, err := os.ReadFile(snapshot)
				if err != nil {
					return exitWith(2, err)
				}
				raw = b
			default:
				return exitWith(2, errors.New("give --snapshot FILE|- or --example"))
			}
			req := &pb.PlanRequest{}
			if err := protojson.Unmarshal(raw, req); err != nil {
				return exitWith(2, fmt.Errorf("snapshot: %w", err))
			}
			if policy != "" {
				p, ok := model.ParsePolicy(policy)
				if !ok {
					return exitWith(2, fmt.Errorf("--policy: unknown policy %q", policy))
				}
				if req.Options == nil {
					req.Options = &pb.PlanOptions{}
				}
				req.Options.Policy = wire.PolicyProto(p)
			}
			resp, s, err := planRequest(cmd.Context(), req)
			if err != nil {
				var verr *model.ValidationError
				if errors.As(err, &verr) {
					for _, p := range verr.Problems {
						fmt.Fprintln(cmd.ErrOrStderr(), p)
					}
					return exitWith(2, fmt.Errorf("invalid snapshot: %d problems", len(verr.Problems)))
				}
				return err
			}
			switch format {
			case "json":
				b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(resp)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return err
			case "table":
				return writeTable(cmd.OutOrStdout(), s, resp)
			}
			return exitWith(2, fmt.Errorf("--format: want json or table, got %q", format))
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "PlanRequest in protojson: a file, or - for stdin")
	cmd.Flags().BoolVar(&example, "example", false, "plan the embedded example snapshot")
	cmd.Flags().StringVar(&policy, "policy", "", "override the request's policy: "+strings.Join(policyNames(), ", "))
	cmd.Flags().StringVar(&format, "format", "json", "output: json or table")
	return cmd
}

func policyNames() []string {
	var out []string
	for p := model.PolicyFCFS; p <= model.PolicyHuitianGreedy; p++ {
		out = append(out, p.String())
	}
	return out
}

// planRequest validates, converts and plans one request.
func planRequest(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, *model.Snapshot, error) {
	s, err := wire.Snapshot(req)
	if err != nil {
		return nil, nil, err
	}
	d, err := solver.Plan(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	return wire.Response(d), s, nil
}
