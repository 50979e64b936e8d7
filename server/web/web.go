package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// AssetsPath is the URL path under which the page's scripts and styles are
// served.
const AssetsPath = "/ui/"

// Mount adds the page's routes to mux: the page at / and /jobs/<id> (one
// HTML document; the script draws what the path names) and its assets
// under AssetsPath. Only GET (and HEAD) are routed, and only those paths, so
// every other path keeps its handler or its 404. The routes need no token:
// they hold no data, and the page asks for a token when the API does.
func Mount(mux *http.ServeMux) {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
	files := http.StripPrefix(AssetsPath, http.FileServerFS(sub))
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /jobs/{id}", page)
	mux.Handle("GET "+AssetsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}

// secure sets headers that keep the page to its own origin: scripts,
// styles and API calls from this server only, and no framing.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
