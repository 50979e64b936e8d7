package model

import "strings"

// CompareIDs orders job ids naturally: ids made only of decimal digits
// compare as numbers (so trace id "9" sorts before "10"), and those come
// before any other id; other ids compare as strings.
func CompareIDs(a, b string) int {
	da, db := isDigits(a), isDigits(b)
	switch {
	case da && db:
		ta, tb := strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(ta) != len(tb) {
			if len(ta) < len(tb) {
				return -1
			}
			return 1
		}
		if c := strings.Compare(ta, tb); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case da:
		return -1
	case db:
		return 1
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
