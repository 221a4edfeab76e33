package web

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
)

//go:embed assets
var assets embed.FS

// staticFS serves /static/… from assets/static.
var staticFS = func() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}()

// pages are parsed when first shown, not when the program starts: most
// commands show none.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(assets, "assets/*.html"))
})

// serveIndex is the page; opening it connects the enabled servers in the
// background (open.go), so what it shows is found out, not assumed.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	s.connectEnabled()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pages().ExecuteTemplate(w, "index.html", map[string]any{"SignIn": s.opts.OAuth != nil})
}

// loginPage is what the sign-in tab shows when it is not sent on to the
// authorization server.
func (s *Server) loginPage(w http.ResponseWriter, status int, title, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pages().ExecuteTemplate(w, "login.html", map[string]string{"Title": title, "Message": message})
}
