package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTopoCmd is replaced by the gputopo work (issue 7).
func newTopoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "topo",
		Short: "Print this node's GPU topology as the API wants it",
		RunE: func(*cobra.Command, []string) error {
			return exitWith(3, errors.New("topo: not implemented yet"))
		},
	}
}
