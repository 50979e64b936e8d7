package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Documents lists the documents Check reads, relative to the repository
// root: README.md and every docs/*.md.
func Documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.ToSlash(rel))
	}
	slices.Sort(out[1:])
	return out, nil
}

var (
	// inline is [text](target "title"); the text may span lines.
	inline = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef is a reference definition: [label]: target.
	refDef = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// html is an href or src attribute.
	html = regexp.MustCompile(`(?:href|src)\s*=\s*"([^"]*)"`)
	// scheme is a URL's scheme (https:, mailto:): not a file of the repository.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// upward is a path written in the text that climbs out of its folder.
	upward = regexp.MustCompile(`(?:^|[\s(\x60'"=:\[])((?:\.\./)+[^\s)\x60'"\]]*)`)
)

// Check reads each document (paths relative to root, slash-separated) and
// returns every problem, one line each, "file:line: what": a relative link
// to a file or folder that does not exist, to a heading that the target
// Markdown file does not have, an absolute link, or a link or a path in
// the text that leads outside root.
func Check(root string, docs []string) ([]string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	// The folder around the repository, as a path the text could name
	// (/work/ for /work/main): nothing of it is the reader's.
	around := filepath.ToSlash(filepath.Dir(abs))
	if around != "/" {
		around += "/"
	} else {
		around = ""
	}
	var problems []string
	for _, doc := range docs {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			return nil, err
		}
		problems = append(problems, checkDoc(root, around, doc, string(b))...)
	}
	return problems, nil
}

func checkDoc(root, around, doc, text string) []string {
	var out []string
	bad := func(off int, format string, args ...any) {
		line := 1 + strings.Count(text[:off], "\n")
		out = append(out, fmt.Sprintf("%s:%d: %s", doc, line, fmt.Sprintf(format, args...)))
	}
	dir := pathDir(doc)
	// 1. Paths in the text, code blocks included: none climbs out of the
	// repository.
	for _, m := range upward.FindAllStringSubmatchIndex(text, -1) {
		p := text[m[2]:m[3]]
		if _, ok := resolve(dir, p); !ok {
			bad(m[2], "%s leads outside the repository", p)
		}
	}
	if around != "" {
		for off := 0; ; {
			i := strings.Index(text[off:], around)
			if i < 0 {
				break
			}
			off += i
			if off == 0 || !isPathByte(text[off-1]) {
				bad(off, "%s… is outside the repository", around)
			}
			off += len(around)
		}
	}
	// 2. Links, outside fenced code blocks.
	prose := blankFences(text)
	var links [][2]int
	for _, re := range []*regexp.Regexp{inline, refDef, html} {
		for _, m := range re.FindAllStringSubmatchIndex(prose, -1) {
			links = append(links, [2]int{m[2], m[3]})
		}
	}
	slices.SortFunc(links, func(a, b [2]int) int { return a[0] - b[0] })
	for _, l := range links {
		target := prose[l[0]:l[1]]
		if scheme.MatchString(target) {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		if strings.HasPrefix(file, "/") {
			bad(l[0], "link %s is absolute: give a path relative to %s", target, doc)
			continue
		}
		p := doc
		if file != "" {
			var ok bool
			if p, ok = resolve(dir, file); !ok {
				bad(l[0], "link %s leads outside the repository", target)
				continue
			}
		}
		full := filepath.Join(root, filepath.FromSlash(p))
		st, err := os.Stat(full)
		if err != nil {
			bad(l[0], "link %s: no such file in the repository", target)
			continue
		}
		if frag == "" || st.IsDir() || !strings.HasSuffix(p, ".md") {
			continue
		}
		b, err := os.ReadFile(full)
		if err != nil {
			bad(l[0], "link %s: %v", target, err)
			continue
		}
		if !slices.Contains(Anchors(string(b)), frag) {
			bad(l[0], "link %s: %s has no heading #%s", target, p, frag)
		}
	}
	return out
}

// resolve joins a relative path to the folder of the document it is
// written in (both slash-separated, relative to the root) and says whether
// the result stays inside the root.
func resolve(dir, p string) (string, bool) {
	j := pathClean(dir + "/" + p)
	if j == ".." || strings.HasPrefix(j, "../") {
		return "", false
	}
	return j, true
}

func isPathByte(c byte) bool {
	return c == '.' || c == '_' || c == '-' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func pathDir(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return "."
}

func pathClean(p string) string { return filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) }

// blankFences returns text with the lines of fenced code blocks (``` or
// ~~~) blanked, keeping every offset.
func blankFences(text string) string {
	b := []byte(text)
	fence := ""
	for start := 0; start < len(b); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += start
		}
		line := strings.TrimLeft(text[start:end], " ")
		opens := strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")
		inside := fence != ""
		switch {
		case !inside && opens:
			fence = line[:3]
		case inside && strings.HasPrefix(line, fence):
			fence = ""
		}
		if inside || opens {
			for i := start; i < end; i++ {
				b[i] = ' '
			}
		}
		start = end + 1
	}
	return string(b)
}

// Anchors returns the anchors GitHub gives a Markdown file's headings:
// lowercased, punctuation dropped, spaces as hyphens, a repeated one
// suffixed -1, -2, …
func Anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	for _, line := range strings.Split(blankFences(text), "\n") {
		t := strings.TrimLeft(line, " ")
		h := strings.TrimLeft(t, "#")
		if len(h) == len(t) || len(t)-len(h) > 6 || h != "" && h[0] != ' ' {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				a.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				a.WriteRune(r)
			}
		}
		s := a.String()
		if n := seen[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}
