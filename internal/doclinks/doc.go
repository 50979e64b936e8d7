// Package doclinks checks the repository's documents for operators — the
// README and docs/*.md — so that every relative link in them resolves to a
// file of the repository and nothing in them points outside it: readers
// get the repository, not the folders around it.
package doclinks
