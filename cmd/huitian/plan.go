package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newPlanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plan",
		Short: "Plan one cycle for a snapshot",
		RunE: func(*cobra.Command, []string) error {
			return exitWith(1, errors.New("plan: not implemented yet"))
		},
	}
}
