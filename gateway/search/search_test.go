package search

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"list_pull_requests", []string{"list", "pull", "requests"}},
		{"get-file-contents", []string{"get", "file", "contents"}},
		{"linear_getIssueById", []string{"linear", "get", "issue", "by", "id"}},
		{"HTTPServer", []string{"http", "server"}},
		{"what PRs are open", []string{"what", "pr", "are", "open"}},
		{"API-post-page", []string{"api", "post", "page"}},
		{"config.toml", []string{"config", "toml"}},
		{"r2_buckets_list", []string{"r", "2", "r2", "buckets", "list"}},
		{"read ~/notes/2024.txt", []string{"read", "notes", "2024", "txt"}},
		{"Überprüfung läuft", []string{"überprüfung", "läuft"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := words(tt.in); !cmp.Equal(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTermsDropStopWordsNumbersAndLetters(t *testing.T) {
	got := terms("Show me all of the 12 open issues in a repo")
	want := []string{stem("show"), stem("open"), stem("issues"), stem("repo")}
	if !cmp.Equal(got, want) {
		t.Errorf("terms = %q, want %q", got, want)
	}
}

func TestStemMeets(t *testing.T) {
	for _, group := range [][]string{
		{"issue", "issues"},
		{"merge", "merged", "merging", "merges"},
		{"list", "listing", "listed", "lists"},
		{"create", "created", "creating", "creates"},
		{"repository", "repositories"},
		{"branch", "branches"},
		{"commit", "commits", "committed", "committing"},
		{"add", "added", "adds", "adding"},
		{"query", "queries", "queried"},
		{"cookie", "cookies"},
		{"movie", "movies"},
		{"key", "keys"},
		{"day", "days"},
		{"run", "running", "runs", "ran"},
		{"write", "wrote", "written", "writes"},
		{"process", "processes"},
		{"reply", "replies", "replied"},
		{"cache", "caches", "cached"},
		{"api", "apis"}, {"uri", "uris"}, {"wiki", "wikis"}, {"emoji", "emojis"},
		{"diff", "diffs", "diffing", "diffed"},
		{"embed", "embeds", "embedding", "embedded"},
		{"exceed", "exceeds", "exceeded", "exceeding"},
		{"cancel", "canceled", "cancelled", "cancelling", "cancels"},
		{"label", "labelled", "labeled", "labelling"},
		{"install", "installed", "installing", "installs"},
		{"color", "colour", "colours", "colored"},
		{"organize", "organise", "organised", "organizing"},
		{"organization", "organisation", "organisations"},
		{"authorize", "authorise", "authorised", "authorising"},
		{"analyze", "analyse", "analysed", "analysing"},
		{"catalog", "catalogue", "catalogues"},
		{"license", "licence", "licences"},
	} {
		want := stem(group[0])
		for _, w := range group[1:] {
			if got := stem(w); got != want {
				t.Errorf("stem(%q) = %q, want %q like stem(%q)", w, got, want, group[0])
			}
		}
	}
}

func TestStemKeepsApart(t *testing.T) {
	for _, pair := range [][2]string{
		{"status", "state"},
		{"comment", "commit"},
		{"string", "str"},
		{"address", "add"},
		{"analysis", "analyze"},
		{"need", "ne"},
		{"redis", "redi"},
		{"axis", "axi"},
		{"call", "cal"},
		{"fill", "fil"},
	} {
		if stem(pair[0]) == stem(pair[1]) {
			t.Errorf("stem(%q) == stem(%q) == %q, want them apart", pair[0], pair[1], stem(pair[0]))
		}
	}
}

// catalog is a small hand-made catalog of look-alike tools.
var catalog = []Doc{
	{Server: "github", ServerTitle: "GitHub", Tool: "create_issue", Description: "Create a new issue in a GitHub repository.",
		Params: []Param{{"owner", "Repository owner", false}, {"repo", "Repository name", false}, {"title", "Issue title", false}, {"body", "Issue body", false}}},
	{Server: "github", ServerTitle: "GitHub", Tool: "list_issues", Description: "List issues in a GitHub repository. Filter by state (open, closed).",
		Params: []Param{{"owner", "Repository owner", false}, {"repo", "Repository name", false}, {"state", "open or closed", false}}},
	{Server: "github", ServerTitle: "GitHub", Tool: "get_issue", Description: "Get the details of one issue.",
		Params: []Param{{"owner", "", false}, {"repo", "", false}, {"issue_number", "The issue number", false}}},
	{Server: "github", ServerTitle: "GitHub", Tool: "add_issue_comment", Description: "Add a comment to an issue.",
		Params: []Param{{"issue_number", "", false}, {"body", "Comment text", false}}},
	{Server: "github", ServerTitle: "GitHub", Tool: "create_pull_request", Description: "Open a new pull request.",
		Params: []Param{{"head", "Branch with the changes", false}, {"base", "Branch to merge into", false}}},
	{Server: "github", ServerTitle: "GitHub", Tool: "list_pull_requests", Description: "List pull requests in a repository.",
		Params: []Param{{"state", "Filter by state: open, closed, all", false}}},
	{Server: "github", ServerTitle: "GitHub", Tool: "merge_pull_request", Description: "Merge a pull request.",
		Params: []Param{{"pull_number", "", false}, {"merge_method", "merge, squash or rebase", false}}},
	{Server: "slack", ServerTitle: "Slack", Tool: "channels_list", Description: "List the channels of the workspace."},
	{Server: "slack", ServerTitle: "Slack", Tool: "conversations_add_message", Description: "Add a message to a channel or thread.",
		Params: []Param{{"channel_id", "Channel ID or #name", false}, {"text", "Message text", false}}},
	{Server: "linear", ServerTitle: "Linear", Tool: "linear_createIssue", Description: "Create an issue in Linear.",
		Params: []Param{{"teamId", "", false}, {"title", "", false}}},
	{Server: "filesystem", Tool: "read_file", Description: "Read the complete contents of a file.",
		Params: []Param{{"path", "Path of the file", false}}},
	{Server: "filesystem", Tool: "list_directory", Description: "List the files and directories in a path.",
		Params: []Param{{"path", "", false}}},
	{Server: "kubernetes", Tool: "pods_log", Description: "Get the logs of a pod.",
		Params: []Param{{"name", "Pod name", false}, {"namespace", "", false}, {"tail", "Number of lines from the end", false}}},
	{Server: "sentry", Tool: "get_event_stacktrace", Description: "Show the stacktrace of an event."},
}

func tool(i int) string { return catalog[i].Server + "/" + catalog[i].Tool }

func TestRanking(t *testing.T) {
	ix := New(catalog)
	tests := []struct {
		query, want string
		within      int // the wanted tool is among the first within hits
	}{
		{"open a bug", "github/create_issue", 1},
		{"file a ticket in Linear", "linear/linear_createIssue", 1},
		{"what PRs are still open?", "github/list_pull_requests", 1},
		{"merge PR #12, squashing the commits", "github/merge_pull_request", 1},
		{"reply on issue 77 that it's fixed", "github/add_issue_comment", 1},
		{"post 'deploy finished' in the #releases Slack channel", "slack/conversations_add_message", 1},
		{"which Slack channels are there", "slack/channels_list", 1},
		{"tail the logs of pod api-7", "kubernetes/pods_log", 1},
		{"what's inside the /srv/data folder?", "filesystem/list_directory", 1},
		{"show me the contents of ~/notes.txt", "filesystem/read_file", 1},
		{"show the full stack trace of that event", "sentry/get_event_stacktrace", 1},
		{"list the issues of acme/web on GitHub", "github/list_issues", 1},
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, tt.within)
		var got []string
		for _, h := range hits {
			got = append(got, tool(h.Doc))
		}
		found := false
		for _, g := range got {
			found = found || g == tt.want
		}
		if !found {
			t.Errorf("Search(%q) = %v, want %s in the first %d", tt.query, got, tt.want, tt.within)
		}
	}
}

func TestRankingPrefersCreateForOpenABug(t *testing.T) {
	ix := New(catalog)
	rank := map[string]int{}
	for i, h := range ix.Search("open a bug in the acme/web GitHub repo", 20) {
		rank[tool(h.Doc)] = i + 1
	}
	c, l := rank["github/create_issue"], rank["github/list_issues"]
	if c == 0 || l != 0 && c > l {
		t.Errorf("create_issue at %d, list_issues at %d; want create_issue above", c, l)
	}
}

func TestNeverEmptyWhileAWordIsShared(t *testing.T) {
	ix := New(catalog)
	for _, q := range []string{
		"squash",                         // only in a parameter description
		"rebase everything, please",      // one shared word among stop words
		"workspace",                      // only in a description
		"namespaces",                     // shared after stemming
		"something about acme/workspace", // shared only inside an entity
	} {
		if hits := ix.Search(q, 5); len(hits) == 0 {
			t.Errorf("Search(%q) found nothing", q)
		}
	}
}

func TestEmptyWhenNothingIsShared(t *testing.T) {
	ix := New(catalog)
	for _, q := range []string{"", "   ", "what is it that you are doing?", "42", "zebra crossing"} {
		if hits := ix.Search(q, 5); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want nothing", q, hits)
		}
	}
}

func TestFallbacks(t *testing.T) {
	docs := []Doc{
		{Server: "a", Tool: "get_stacktrace", Description: "Stacktrace of an event"},
		{Server: "a", Tool: "search_code", Description: "Search code in a code base"},
		{Server: "a", Tool: "get_deployment", Description: "Get a deployment"},
		{Server: "a", Tool: "list_events", Description: "List events"},
	}
	ix := New(docs)
	tests := []struct{ query, want string }{
		{"stack trace", "get_stacktrace"},        // two words meet one compound
		{"codebase", "search_code"},              // an unknown compound meets its parts
		{"what did we deploy", "get_deployment"}, // a word meets its derived form
		{"eventful", "list_events"},              // an unknown word meets a known prefix
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, 1)
		if len(hits) == 0 || docs[hits[0].Doc].Tool != tt.want {
			t.Errorf("Search(%q) = %v, want %s first", tt.query, hits, tt.want)
		}
	}
}

func TestTiesKeepDocOrder(t *testing.T) {
	var docs []Doc
	for i := range 5 {
		docs = append(docs, Doc{Server: fmt.Sprint("s", i), Tool: "list_widgets", Description: "List widgets"})
	}
	hits := New(docs).Search("widgets", 10)
	if len(hits) != 5 {
		t.Fatalf("got %d hits, want 5", len(hits))
	}
	for i, h := range hits {
		if h.Doc != i || h.Score != hits[0].Score {
			t.Fatalf("hits = %v, want docs 0..4 with equal scores", hits)
		}
	}
}

func TestDeterministicAndConcurrent(t *testing.T) {
	ix := New(catalog)
	queries := []string{"open a bug", "what PRs are open", "tail pod logs", "post to slack", "read a file"}
	want := map[string][]Hit{}
	for _, q := range queries {
		want[q] = ix.Search(q, 5)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				q := queries[(g+i)%len(queries)]
				if got := ix.Search(q, 5); !cmp.Equal(got, want[q]) {
					t.Errorf("Search(%q) = %v, then %v", q, want[q], got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLimit(t *testing.T) {
	ix := New(catalog)
	all := ix.Search("issue", 100)
	if len(all) < 3 {
		t.Fatalf("Search(issue) found %d, want several", len(all))
	}
	for _, limit := range []int{1, 2, len(all)} {
		got := ix.Search("issue", limit)
		if !cmp.Equal(got, all[:limit]) {
			t.Errorf("limit %d: got %v, want %v", limit, got, all[:limit])
		}
	}
	for _, limit := range []int{0, -1} {
		if got := ix.Search("issue", limit); got != nil {
			t.Errorf("limit %d: got %v, want nil", limit, got)
		}
	}
	for i := 1; i < len(all); i++ {
		if better(all[i], all[i-1]) {
			t.Errorf("hits not best first: %v", all)
		}
	}
}

func TestEmptyIndex(t *testing.T) {
	if got := New(nil).Search("anything", 5); got != nil {
		t.Errorf("got %v from an empty index", got)
	}
}

func TestNewDoesNotModifyDocs(t *testing.T) {
	docs := []Doc{{Server: "github", ServerTitle: "GitHub", Tool: "list_issues", Description: "List issues", Params: []Param{{"repo", "Repository", false}}}}
	before := fmt.Sprint(docs)
	New(docs)
	if after := fmt.Sprint(docs); after != before {
		t.Errorf("docs changed: %s, was %s", after, before)
	}
}

func TestEntityKinds(t *testing.T) {
	tests := []struct{ in, want string }{
		{"When was config.yaml last modified?", "When was  last modified? . file"},
		{"open diagram.PNG for me", "open  for me . file image audio"},
		{"rename notes.txt to notes-2024.txt", "rename  to  . file file"},
		{"is example.com up? see v1.2", "is example.com up? see v1.2"}, // a domain and a version are not files
		{"deploy the Next.js app from index.js", "deploy the Next.js app from  . file"},
		{"Book a sync on Friday at 2pm", "Book a sync on   at   . date date"},
		{"errors in the last 7 days since 2026-03-14", "errors in the last   since   . date date"},
		{"may I see March 3rd and 14:30", "may I see   and   . date date"}, // a month only with its day
		{"hand ENG-120 over", "hand   over . issue"},
		{"star acme/web-app", "star  . repo"},
		{"a label called Vendors/2025", "a label called Vendors/2025"},         // a repository's name has a letter
		{"run `cat /etc/hosts` in web-1", "run   in web-1 . command"},          // a command, not its path
		{"restart `payments` and `orders`", "restart `payments` and `orders`"}, // a name in backticks is a name
	}
	for _, tt := range tests {
		c := defaultConfig
		c.takes, c.hosts = false, false
		if got := replaceEntities(tt.in, &c); got != tt.want {
			t.Errorf("replaceEntities(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEntityKindsRank(t *testing.T) {
	docs := []Doc{
		{Server: "fs", Tool: "read_text_file", Description: "Read the contents of a file as text"},
		{Server: "fs", Tool: "read_media_file", Description: "Read an image or audio file as base64"},
		{Server: "fs", Tool: "get_file_info", Description: "Metadata of a file: size, last modified time"},
		{Server: "k8s", Tool: "configuration_view", Description: "View the kubeconfig configuration yaml"},
		{Server: "cal", Tool: "list_calendars", Description: "List calendars"},
		{Server: "cal", Tool: "list_events", Description: "List events", Params: []Param{{Name: "start_date", Description: "Date to start from"}}},
		{Server: "k8s", Tool: "pods_exec", Description: "Execute in a pod", Params: []Param{{Name: "name"}, {Name: "command"}}},
	}
	ix := New(docs)
	tests := []struct{ query, want string }{
		{"When was config.yaml last modified?", "get_file_info"},  // not the yaml configuration
		{"read diagram.png", "read_media_file"},                   // not the text reader before it
		{"list what is on Friday", "list_events"},                 // the one that takes a date
		{"`tail -n 50 /var/log/app.log` on web-7f9", "pods_exec"}, // a command, not a file
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, 1)
		if len(hits) == 0 || docs[hits[0].Doc].Tool != tt.want {
			t.Errorf("Search(%q) = %v, want %s first", tt.query, hits, tt.want)
		}
	}
}

// TestCommitHashes: a hash of hexadecimal digits and letters is a
// commit's; a number, a word, a short code or a part of a UUID is not.
func TestCommitHashes(t *testing.T) {
	c := defaultConfig
	c.hosts = false
	checkEntities(t, &c, map[string]string{
		"revert a1b2c3d please":                     "revert   please . commit takesrevision",
		"diff 0123abc4567def8 against main":         "diff   against main . commit takesrevision",
		"the message at ts 1718901234.000200":       "the message at ts 1718901234.000200",
		"deadbeef and cafe2 and build 4f2":          "deadbeef and cafe2 and build 4f2",
		"invoice in_1a2b3c4d5e for the refund":      "invoice in_1a2b3c4d5e for the refund",
		"page 123e4567-e89b-12d3-a456-426614174000": "page 123e4567-e89b-12d3-a456-426614174000",
		"compare a1b2c3d e4f5a6b":                   "compare     . commit takesrevision commit takesrevision",
	})
}

// checkEntities checks what replaceEntities makes of each query under c.
func checkEntities(t *testing.T, c *config, want map[string]string) {
	t.Helper()
	for in, w := range want {
		if got := replaceEntities(in, c); got != w {
			t.Errorf("replaceEntities(%q) = %q, want %q", in, got, w)
		}
	}
}

// TestAmounts: an amount of money is read as its kind, whatever its
// figure, and a figure that is not money stays.
func TestAmounts(t *testing.T) {
	c := defaultConfig
	checkEntities(t, &c, map[string]string{
		"give back $40 of it":           "give back   of it . amount",
		"€1,250.50 into the account":    "  into the account . amount",
		"refund 300 USD and 12 dollars": "refund   and   . amount amount",
		"a $ sign and 40 seats":         "a $ sign and 40 seats",
		"the 3 pounds of flour":         "the 3 pounds of flour",
	})
	c.amounts = false
	checkEntities(t, &c, map[string]string{"give back $40": "give back $40"})
}

func TestTakesReadsWords(t *testing.T) {
	for name, want := range map[string]string{
		"url": takesURL, "issueUrl": takesURL, "resource_uri": takesURL, "URL": takesURL, "redirectURL": takesURL,
		"path": takesPath, "repo_path": takesPath, "filePaths": takesPath,
		"sha": takesRev, "revision": takesRev, "commitHash": takesRev, "base_rev": takesRev,
		"security_level": "", "during": "", "curl_args": "", "pathology": "", "id": "", "shape": "", "commit_message": "",
	} {
		if got := takes(name); got != want {
			t.Errorf("takes(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestRequiredURLOrPathRanks: a URL or a path in the query meets the tools
// that cannot be called without one, where the word "url" or "path" alone
// is in every tool that merely mentions one.
func TestRequiredURLOrPathRanks(t *testing.T) {
	docs := []Doc{
		{Server: "wiki", Tool: "get_page", Description: "Get a page as markdown",
			Params: []Param{{Name: "page_id", Required: true}}},
		{Server: "wiki", Tool: "get_page_history", Description: "History of a page and its URL",
			Params: []Param{{Name: "page_id", Required: true}, {Name: "region_url"}}},
		{Server: "monitor", Tool: "find_monitors", Description: "Find the monitors of a URL",
			Params: []Param{{Name: "region_url"}}},
		{Server: "web", Tool: "fetch", Description: "Fetches content from the internet",
			Params: []Param{{Name: "url", Required: true}}},
		{Server: "files", Tool: "list_tree", Description: "What is in a folder",
			Params: []Param{{Name: "root", Description: "Where to start, a path"}}},
		{Server: "files", Tool: "file_info", Description: "What a file is: its size and times",
			Params: []Param{{Name: "path", Description: "A path"}}},
		{Server: "vcs", Tool: "git_log", Description: "Shows the commit log",
			Params: []Param{{Name: "repo_path", Required: true}}},
		{Server: "vcs", Tool: "git_show", Description: "Shows the contents of a commit",
			Params: []Param{{Name: "repo_path", Required: true}, {Name: "revision", Required: true}}},
		{Server: "vcs", Tool: "git_commit", Description: "Records changes to the repository",
			Params: []Param{{Name: "repo_path", Required: true}, {Name: "message", Required: true}}},
	}
	// Others, so that words weigh as in a catalog of some size.
	for _, w := range strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima") {
		docs = append(docs, Doc{Server: "other", Tool: "do_" + w, Description: "Does " + w + " things"})
	}
	docs = append(docs, Doc{Server: "notes", Tool: "export_note", Description: "Export a note as markdown"})
	tests := []struct{ query, want string }{
		{"grab https://shop.example.com/robots.txt as-is, no markdown", "fetch"},
		{"what is in ~/dev/infra", "git_log"},
		{"what did 9f3e2a1 change? author and patch, it's in ~/dev/infra", "git_show"},
	}
	rank := func(takes bool, query, want string) int {
		c := defaultConfig
		c.takes = takes
		for i, h := range newIndex(docs, c).Search(query, len(docs)) {
			if docs[h.Doc].Tool == want {
				return i + 1
			}
		}
		return len(docs) + 1
	}
	for _, tt := range tests {
		with, without := rank(true, tt.query, tt.want), rank(false, tt.query, tt.want)
		if with >= without || with > 3 {
			t.Errorf("Search(%q): %s ranks %d, and %d without the required parameter's term; want it higher, in the first three", tt.query, tt.want, with, without)
		}
	}
}

func TestHostWords(t *testing.T) {
	for url, want := range map[string][]string{
		"https://acme.slack.com/archives/C04/p17":   {"acme", "slack"},
		"https://www.twilio.com/en-us/sms":          {"twilio"},
		"http://user@grafana.internal:3000/d/abc":   {"grafana"},
		"https://localhost/x":                       {"localhost"},
		"file:///etc/hosts":                         nil,
		"https://linear.app/acme/issue/ENG-1/title": {"linear"},
	} {
		if got := hostWords(url); !slices.Equal(got, want) {
			t.Errorf("hostWords(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestHostNamesTheProduct: a pasted link's host names the product the need
// is about, though the rest of the query does not.
func TestHostNamesTheProduct(t *testing.T) {
	docs := []Doc{
		{Server: "tracker", ServerTitle: "Tracker", Tool: "get_issue_replies", Description: "Get the replies of an issue"},
		{Server: "slack", ServerTitle: "Slack", Tool: "conversations_replies", Description: "Get the replies of a thread"},
	}
	for _, w := range strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel") {
		docs = append(docs, Doc{Server: "other", Tool: "do_" + w, Description: "Does " + w + " things"})
	}
	query := "https://acme.slack.com/archives/C04ABCD1234/p1718822400123456 what did people reply there?"
	for _, hosts := range []bool{true, false} {
		c := defaultConfig
		c.hosts = hosts
		hits := newIndex(docs, c).Search(query, 1)
		first := len(hits) > 0 && docs[hits[0].Doc].Server == "slack"
		if first != hosts {
			t.Errorf("hosts=%v: Search(%q) = %v; Slack's tool first: %v, want %v", hosts, query, hits, first, hosts)
		}
	}
	// A quote left open keeps them out, rather than at full weight.
	c := defaultConfig
	c.takes = false
	if got := replaceEntities(`what did people reply on "https://acme.slack.com/archives/C04"`, &c); strings.Contains(got, "slack") {
		t.Errorf("replaceEntities with an open quote = %q, want no host words", got)
	}
}

func TestSegmentsTakeNamesAsPayload(t *testing.T) {
	tests := []struct {
		in   string
		want []string // the payload parts
	}{
		{"make a folder called reports in my project dir", []string{"called reports"}},
		{"Start a new doc titled Q3 Plan for the team", []string{"titled Q3 Plan"}},
		{"create a channel named dev-ops", []string{"named dev-ops"}},
		{"who called the API?", nil}, // a verb, not a name
		{"list every file", nil},
	}
	for _, tt := range tests {
		parts, payload := segments(tt.in, true)
		var got []string
		for i, p := range parts {
			if payload[i] {
				got = append(got, p)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("segments(%q) payload = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNamesRank: the name a need gives what it makes does not decide
// which tool makes it.
func TestNamesRank(t *testing.T) {
	docs := []Doc{
		{Server: "fs", Tool: "create_directory", Description: "Create a new directory"},
		{Server: "fs", Tool: "list_directory", Description: "List the files of a directory"},
		{Server: "billing", Tool: "create_invoice", Description: "Create an invoice for a customer"},
		{Server: "billing", Tool: "list_invoices", Description: "List invoices"},
	}
	ix := New(docs)
	hits := ix.Search("make a folder called invoices", 1)
	if len(hits) == 0 || docs[hits[0].Doc].Tool != "create_directory" {
		t.Errorf("Search = %v, want create_directory first", hits)
	}
}
