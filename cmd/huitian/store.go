package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/server"
)

func newStoreCmd() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Check, dump, recover or compact the service's store (huitian serve --data)",
		Long: `store inspects the store that huitian serve keeps under --data
(huitian.db). Run it while no server uses the store.

  check    bbolt's consistency check, the format record, and every
           cluster's events, decisions and last plan: what is readable.
           Exits 1 when anything is not.
  dump     every readable log entry, one JSON object a line.
  recover  copy every readable event and decision into a new store
           under --to; then start huitian serve with --data on it.
  compact  rewrite the store into a new file without its free pages and
           rename it over the old one (bbolt reuses freed pages but never
           shrinks its file). A crash before the rename leaves the old
           file as it was. huitian serve also compacts at start when free
           pages are --compact-free of the file or more.

huitian serve refuses to start on a damaged store and names these steps.`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data", server.Defaults().DataDir, "the store's folder, as given to huitian serve --data")

	check := &cobra.Command{
		Use:   "check",
		Short: "Say what in the store is readable; exit 1 when anything is not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := server.CheckStore(dataDir)
			if err != nil {
				return exitWith(2, err)
			}
			rep.Write(cmd.OutOrStdout())
			if !rep.OK() {
				return exitWith(1, errors.New("the store is damaged: `huitian store recover` copies what is readable into a new store"))
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	dump := &cobra.Command{
		Use:   "dump",
		Short: "Print every readable log entry as JSON lines",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := server.DumpStore(dataDir, cmd.OutOrStdout())
			if err != nil {
				return exitWith(2, err)
			}
			if !rep.OK() {
				rep.Write(cmd.ErrOrStderr())
			}
			return nil
		},
	}
	var to string
	recoverCmd := &cobra.Command{
		Use:   "recover",
		Short: "Copy every readable event and decision into a new store under --to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return exitWith(2, errors.New("--to: name the new store's folder"))
			}
			rep, err := server.RecoverStore(dataDir, to)
			if rep != nil {
				rep.Write(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recovered into %s: start the service with --data %s\n", server.StorePath(to), to)
			return nil
		},
	}
	recoverCmd.Flags().StringVar(&to, "to", "", "folder for the new store (must not hold one)")
	compact := &cobra.Command{
		Use:   "compact",
		Short: "Rewrite the store into a new file without free pages (crash-safe: the old file stays until the rename)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			before, after, err := server.CompactStore(dataDir)
			if err != nil {
				return exitWith(2, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compacted %s: %d -> %d bytes\n", server.StorePath(dataDir), before, after)
			return nil
		},
	}
	cmd.AddCommand(check, dump, recoverCmd, compact)
	return cmd
}
