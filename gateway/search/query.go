package search

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/mcpgate/mcpgate/internal/lazyregexp"
)

// concept is one unit of meaning in the query: a word or phrase and its
// synonyms. A document scores for it as the best of its alternatives.
type concept struct {
	key    string
	alts   []alt
	weight float64 // 1, or less for payload
	boost  bool    // only adds to documents other concepts found
}

// alt is one way a concept can appear in a document: all of its terms.
type alt struct {
	terms  []int32
	weight float64
}

type qtoken struct {
	word    string // as written, lower-cased
	key     string // the stem of a meaningful word, else the word
	term    bool   // meaningful
	payload bool   // inside content the query carries rather than asks about
}

// qtokens reads s into every word, meaningful (stemmed) or not, so that
// phrases made partly of stop words ("look up", "what are") can be matched.
func (ix *Index) qtokens(s string) []qtoken {
	var toks []qtoken
	for _, w := range words(s) {
		if meaningful(w) {
			toks = append(toks, qtoken{word: w, key: ix.key(w), term: true})
		} else {
			toks = append(toks, qtoken{word: w, key: w})
		}
	}
	return toks
}

// Content a query carries rather than asks about: quoted text, what
// follows "saying", and a name given after "called". The words of "post
// 'deploy finished' in #releases" that find the tool are "post" and
// "releases", not "deploy" and "finished".
var (
	quotedRe = lazyregexp.New(`(?:^|[\s(:,])(?:'([^']+)'|"([^"]+)"|“([^”]+)”|‘([^’]+)’)`)
	sayingRe = lazyregexp.New(`(?i)\b(?:saying|that says|which says|to say|so (?:that )?(?:i|we|you) can)\b[^.!?]*`)
	// A name given to what the need makes or finds: "a folder called
	// reports", "the doc titled Q3 Plan". The name is the word after, and
	// the capitalized words and identifiers that follow it.
	namedRe = lazyregexp.New(`\b(?:[Cc]alled|[Nn]amed|[Tt]itled)\s+([^\s'"“‘]+)(?:\s+[A-Z0-9][^\s]*)*`)
)

// segments splits query into its asking and its payload parts, in order;
// with names, a name given after "called" is payload too.
func segments(query string, names bool) (parts []string, payload []bool) {
	lower := strings.ToLower(query)
	named := names && (strings.Contains(lower, "called") || strings.Contains(lower, "named") || strings.Contains(lower, "titled"))
	if !named && !strings.ContainsAny(query, "'\"“‘") && !strings.Contains(lower, "sa") && !strings.Contains(query, "so ") {
		return []string{query}, []bool{false}
	}
	var spans [][2]int
	for _, m := range quotedRe().FindAllStringSubmatchIndex(query, -1) {
		for g := 2; g < len(m); g += 2 {
			if m[g] >= 0 {
				spans = append(spans, [2]int{m[g], m[g+1]})
			}
		}
	}
	for _, m := range sayingRe().FindAllStringIndex(query, -1) {
		spans = append(spans, [2]int{m[0], m[1]})
	}
	if named {
		for _, m := range namedRe().FindAllStringSubmatchIndex(query, -1) {
			// "who called the API?": a verb, not a name.
			if !stopwords[strings.ToLower(query[m[2]:m[3]])] {
				spans = append(spans, [2]int{m[0], m[1]})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	at := 0
	for _, sp := range spans {
		if sp[0] < at {
			sp[0] = at
		}
		if sp[1] <= sp[0] {
			continue
		}
		parts, payload = append(parts, query[at:sp[0]]), append(payload, false)
		parts, payload = append(parts, query[sp[0]:sp[1]]), append(payload, true)
		at = sp[1]
	}
	parts, payload = append(parts, query[at:]), append(payload, false)
	return parts, payload
}

// Things a query names that say what kind of object it is about, whatever
// their text: "https://…" is a URL, "~/notes/a.txt" a path, "ENG-120" an
// issue key, "jane@acme.com" an email address, "acme/web-app" a repository,
// "`cat /etc/hosts`" a command (words in backticks; one word there is a
// name). Their own words ("https", "eng", "acme", "etc") would only
// mislead.
var (
	commandRe  = lazyregexp.New("`[^`\\s]+\\s[^`]*`")
	urlRe      = lazyregexp.New(`\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+`)
	emailRe    = lazyregexp.New(`\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b`)
	pathRe     = lazyregexp.New(`(^|\s)(~|\.{1,2})?/[\w.@~+-]+(/[\w.@~+-]*)*`)
	hashRe     = lazyregexp.New(`\b[0-9a-f]{7,40}\b`)
	issueKeyRe = lazyregexp.New(`\b[A-Z][A-Z0-9]+-[0-9][0-9A-Z]*\b`)
	extRe      = lazyregexp.New(`\.[a-zA-Z][a-zA-Z0-9]{0,4}$`)
	slugRe     = lazyregexp.New(`(^|\s)[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*[\w]($|[\s,;:!?)])`)
	// A moment or a span of time: "Friday", "2pm", "14:30", "2026-03-14",
	// "March 3", "30 minutes", "the last 7 days". Its words name when,
	// not what; the tools that take one have a date or time parameter.
	whenRe = lazyregexp.New(`(?i)\b(` +
		`(mon|tues|wednes|thurs|fri|satur|sun)days?` +
		`|\d{1,2}(:\d{2})?\s?[ap]\.?m\.?` +
		`|\d{1,2}:\d{2}(:\d{2})?` +
		`|\d{4}-\d{2}-\d{2}([t ]\d{2}:\d{2}(:\d{2})?)?` +
		`|(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?)\s\d{1,2}(st|nd|rd|th)?` +
		`|\d{1,2}(st|nd|rd|th)?\s(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?)` +
		`|\d+\s?(-\s?)?(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?)` +
		`)\b`)
	// A file named by itself, without a folder: "config.yaml", "README.md".
	// Only common extensions count, so "example.com" and "v1.2" are not
	// files, nor is a capitalized name in .js ("Next.js"); an image's or a
	// sound's also names what it holds.
	fileRe   = lazyregexp.New(`(?i)(^|\s)[\w-]+(\.[\w-]+)*\.(txt|md|rst|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|csv|tsv|xml|html?|css|js|mjs|ts|tsx|jsx|go|py|rb|rs|java|kt|swift|c|h|cpp|cs|php|sh|sql|log|lock|pdf|docx?|xlsx?|pptx?|zip|tar|gz|tgz|(png|jpe?g|gif|svg|webp|bmp|ico|heic|mp3|wav|ogg|flac|m4a|mp4|mov|webm))\b`)
	whenHint = lazyregexp.New(`(?i)day|\d`)
	// An amount of money ("$40", "€1,250.50", "300 USD"): its figure says
	// how much, not what to do with it; the tools that take one have an
	// amount or a price.
	amountRe = lazyregexp.New(`(?i)([$€£¥]\s?\d[\d,]*(\.\d+)?\b|\b\d[\d,]*(\.\d+)?\s?(usd|eur|gbp|jpy|dollars?|euros?)\b)`)
)

// A tool that cannot be called without a URL, or a path, is the one a
// query that gives one most likely wants: `fetch` for "grab
// https://…/robots.txt", where the word "url" alone is in the text of
// dozens of tools (every Sentry tool has an optional regionUrl). Such a
// tool's required parameter adds a term of its own to the parameter
// field, and a query's URL or path adds the same term. No catalog word
// is spelled so.
const (
	takesURL  = "takesurl"
	takesPath = "takespath"
	takesRev  = "takesrevision"
)

// takes is the term a required parameter of this name adds, or "": one
// whose name has the word url or uri ("url", "issueUrl", "resource_uri"),
// path ("path", "repo_path") or sha, revision or hash ("sha",
// "revision"), not merely the letters ("security").
func takes(param string) string {
	var kind string
	var word []rune
	end := func() {
		switch strings.ToLower(string(word)) {
		case "url", "urls", "uri", "uris":
			kind = takesURL
		case "path", "paths":
			if kind == "" {
				kind = takesPath
			}
		case "sha", "revision", "rev", "hash":
			if kind == "" {
				kind = takesRev
			}
		}
		word = word[:0]
	}
	prev := ' '
	for _, r := range param {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			end()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			end()
			word = append(word, r)
		default:
			word = append(word, r)
		}
		prev = r
	}
	end()
	return kind
}

// hostWords are the words of a URL's host that may name the product it is
// of: "https://acme.slack.com/archives/…" is Slack's, whatever else the
// URL says. The top-level domain and "www" say nothing. They count as
// payload does, for less than the need, since a host may also name
// nothing the catalog has ("docs.python.org").
func hostWords(url string) []string {
	_, rest, _ := strings.Cut(url, "://")
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, ":")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	labels := strings.Split(host, ".")
	if len(labels) > 1 {
		labels = labels[:len(labels)-1]
	}
	return slices.DeleteFunc(labels, func(l string) bool { return l == "" || l == "www" })
}

// replaceHashes replaces each commit hash in query with a space, calling
// found for each: hexadecimal digits and letters both, not a number or a
// word ("deadbeef"), and not a part of a UUID or another hyphenated ID.
func replaceHashes(query string, found func()) string {
	var b strings.Builder
	at := 0
	for _, m := range hashRe().FindAllStringIndex(query, -1) {
		h := query[m[0]:m[1]]
		switch {
		case !strings.ContainsAny(h, "0123456789") || !strings.ContainsAny(h, "abcdef"):
			continue
		case m[0] > 0 && query[m[0]-1] == '-', m[1] < len(query) && query[m[1]] == '-':
			continue
		}
		b.WriteString(query[at:m[0]])
		b.WriteByte(' ')
		at = m[1]
		found()
	}
	if at == 0 {
		return query
	}
	b.WriteString(query[at:])
	return b.String()
}

// replaceEntities replaces the entities in query with words for their
// kind. The kind words go at the end, so that an entity does not split the
// phrase around it: "hand ENG-120 over to Sam" still says "hand over".
func replaceEntities(query string, c *config) string {
	takesToo, hostsToo := c.takes, c.hosts && c.payload < 1
	var kinds, hosts []string
	kind := func(re *regexp.Regexp, words string) {
		query = re.ReplaceAllStringFunc(query, func(string) string {
			kinds = append(kinds, words)
			return " "
		})
	}
	// The cheap tests keep the regular expressions off most queries.
	if c.commands && strings.Contains(query, "`") {
		kind(commandRe(), "command")
	}
	if strings.Contains(query, "://") {
		query = urlRe().ReplaceAllStringFunc(query, func(u string) string {
			kinds = append(kinds, "url")
			if hostsToo {
				hosts = append(hosts, hostWords(u)...)
			}
			return " "
		})
		if takesToo && len(kinds) > 0 { // kinds held nothing before the URLs
			kinds = append(kinds, takesURL)
		}
	}
	if strings.Contains(query, "@") {
		kind(emailRe(), "email")
	}
	if strings.Contains(query, "/") {
		query = pathRe().ReplaceAllStringFunc(query, func(p string) string {
			if extRe().MatchString(p) {
				kinds = append(kinds, "path file")
			} else {
				kinds = append(kinds, "path")
			}
			if takesToo {
				kinds = append(kinds, takesPath)
			}
			return " "
		})
		query = slugRe().ReplaceAllStringFunc(query, func(m string) string {
			// "Vendors/2025", "and/or 3/4": a repository's name has a letter.
			_, name, _ := strings.Cut(m, "/")
			if !strings.ContainsFunc(name, unicode.IsLetter) {
				return m
			}
			kinds = append(kinds, "repo")
			return " "
		})
	}
	if strings.Contains(query, "-") {
		kind(issueKeyRe(), "issue")
	}
	if c.amounts && strings.ContainsAny(query, "0123456789") {
		kind(amountRe(), "amount")
	}
	// A commit's hash ("a1b2c3d") meets the tools that need one.
	if takesToo && strings.ContainsAny(query, "0123456789") {
		query = replaceHashes(query, func() { kinds = append(kinds, "commit", takesRev) })
	}
	if c.files && strings.Contains(query, ".") {
		query = fileRe().ReplaceAllStringFunc(query, func(f string) string {
			m := fileRe().FindStringSubmatch(f)
			name := strings.TrimSpace(f)
			switch {
			case strings.EqualFold(m[3], "js") && unicode.IsUpper(rune(name[0])):
				return f // Node.js, Next.js, Vue.js: a framework, not a file
			case m[4] != "":
				kinds = append(kinds, "file image audio")
			default:
				kinds = append(kinds, "file")
			}
			return " "
		})
	}
	if c.when && whenHint().MatchString(query) {
		kind(whenRe(), "date")
	}
	// Quoted, they count as payload does: for less than the need. Not
	// where a quote is left open (a quoted URL takes its closing quote
	// with it), which would pair with theirs and leave them outside.
	if len(hosts) > 0 && strings.Count(query, `"`)%2 == 0 {
		query += ` "` + strings.Join(hosts, " ") + `"`
	}
	if len(kinds) == 0 {
		return query
	}
	return query + " . " + strings.Join(kinds, " ")
}

// concepts reads the query into concepts over known terms, reading
// entities as their kind if asked.
func (ix *Index) concepts(query string, entities bool) []concept {
	imperative := ix.cfg.imperative > 0 && startsImperative(query)
	if entities {
		query = replaceEntities(query, &ix.cfg)
	}
	var toks []qtoken
	if ix.cfg.payload < 1 {
		parts, payload := segments(query, ix.cfg.names)
		for i, p := range parts {
			ts := ix.qtokens(p)
			for j := range ts {
				ts[j].payload = payload[i]
			}
			toks = append(toks, ts...)
		}
	} else {
		toks = ix.qtokens(query)
	}

	var out []concept
	seen := map[string]bool{}
	add := func(c concept, ts []qtoken, first bool) {
		if len(c.alts) == 0 || seen[c.key] {
			return
		}
		seen[c.key] = true
		c.weight = ix.cfg.payload
		for _, t := range ts {
			if t.term && !t.payload {
				c.weight = 1
			}
		}
		if first && imperative {
			c.weight *= 1 + ix.cfg.imperative
		}
		out = append(out, c)
	}
	for i := 0; i < len(toks); {
		n := 1
		if m, groups := ix.thes.match(toks[i:]); m > 0 {
			n = m
			add(ix.synonymConcept(toks[i:i+n], groups), toks[i:i+n], i == 0)
		} else if toks[i].term {
			add(ix.wordConcept(toks[i]), toks[i:i+1], i == 0)
		}
		if ix.cfg.compounds && i+1 < len(toks) && toks[i].term && toks[i+1].term {
			// "stack trace" for a catalog that says "stacktrace".
			if id, ok := ix.lookup(ix.key(toks[i].word + toks[i+1].word)); ok {
				c := concept{key: toks[i].key + "+" + toks[i+1].key, alts: []alt{{terms: []int32{id}, weight: 1}}}
				add(c, toks[i:i+2], false)
			}
		}
		i += n
	}
	if ix.cfg.question > 0 && len(out) > 0 && isQuestion(query) {
		// "What PRs are open?" asks for a list, though it never says so.
		c := concept{key: "?", weight: ix.cfg.question, boost: true}
		for _, w := range []string{"list", "search", "find", "get"} {
			if id, ok := ix.lookup(ix.key(w)); ok {
				c.alts = append(c.alts, alt{terms: []int32{id}, weight: 1})
			}
		}
		if len(c.alts) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// isQuestion reports whether the query asks rather than commands.
func isQuestion(query string) bool {
	if strings.HasSuffix(strings.TrimSpace(query), "?") {
		return true
	}
	ws := words(query)
	return len(ws) > 0 && questionWords[ws[0]]
}

var questionWords = map[string]bool{"what": true, "which": true, "who": true, "how": true, "where": true, "when": true}

// startsImperative reports whether the query opens with a meaningful word,
// as a command does ("merge PR 12", "remember that …"), rather than with a
// question word or another stop word ("which PRs are open?").
func startsImperative(query string) bool {
	ws := words(query)
	return len(ws) > 0 && meaningful(ws[0])
}

// key is the term a meaningful word is indexed under.
func (ix *Index) key(w string) string {
	if ix.cfg.stem {
		return stem(w)
	}
	return w
}

// wordConcept is a query word with no synonyms: the word itself and its
// derived forms ("deploy" and "deployment"), or, when no document has the
// word, the known words it is made of ("codebase") or that share a long
// prefix with it.
func (ix *Index) wordConcept(t qtoken) concept {
	c := concept{key: t.key}
	c.alts = ix.ownAlts(c.alts, []qtoken{t})
	if ix.cfg.assoc > 0 {
		if id, ok := ix.lookup(t.key); ok {
			c.alts = append(c.alts, ix.associates(id)...)
		}
	}
	return c
}

// assocSample is how many documents of a query word associates reads.
const assocSample = 128

// associates returns the terms the catalog uses with term id: those found
// in the most of the documents that have it, relative to how common they
// are (cosine of the two terms' document sets), as alternatives at the
// association weight. The catalog teaches that "breadcrumbs" go with
// "events" and "pod" with "namespace"; no query is needed to learn it.
func (ix *Index) associates(id int32) []alt {
	// They change only with the documents: Replace clears the cache.
	if as, ok := ix.assocCache.Load(id); ok {
		return as.([]alt)
	}
	as := ix.associatesOf(id)
	ix.assocCache.Store(id, as)
	return as
}

func (ix *Index) associatesOf(id int32) []alt {
	var buf []posting
	var terms []int32
	ps := ix.postingsOf(id, &buf)
	if len(ps) < 2 || float64(len(ps)) > ix.cfg.assocMaxShare*float64(ix.n) {
		return nil
	}
	// A word in many documents is counted in a sample of them, spread
	// over its postings, so that the work stays bounded at any size.
	step := (len(ps) + assocSample - 1) / assocSample
	co := map[int32]int{}
	for i := 0; i < len(ps); i += step {
		for _, t := range ix.termsOf(ps[i].doc, &terms) {
			if t != id {
				co[t] += step
			}
		}
	}
	type cand struct {
		id  int32
		cos float64
	}
	var cs []cand
	for b, n := range co {
		if n < 2*step {
			continue
		}
		cs = append(cs, cand{b, float64(n) / math.Sqrt(float64(len(ps))*float64(ix.df(b)))})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].cos != cs[j].cos {
			return cs[i].cos > cs[j].cos
		}
		return cs[i].id < cs[j].id
	})
	var out []alt
	for _, c := range cs[:min(ix.cfg.assocTerms, len(cs))] {
		if c.cos < ix.cfg.assocMin {
			break
		}
		out = append(out, alt{terms: []int32{c.id}, weight: ix.cfg.assoc * c.cos})
	}
	return out
}

// ownAlts appends the alternatives of the query's own words toks: all the
// known ones at full weight, and for a single word its derived forms; for a
// single unknown word, its parts or prefix matches.
func (ix *Index) ownAlts(alts []alt, toks []qtoken) []alt {
	a := alt{weight: 1}
	var own []qtoken
	for _, t := range toks {
		if !t.term {
			continue
		}
		own = append(own, t)
		if id, ok := ix.lookup(t.key); ok {
			a.terms = append(a.terms, id)
		}
	}
	if len(own) != 1 {
		if len(a.terms) > 0 {
			alts = append(alts, a)
		}
		return alts
	}
	t := own[0]
	if len(a.terms) > 0 {
		alts = append(alts, a)
		if ix.cfg.derived {
			for _, id := range ix.derivedForms(t.key) {
				alts = append(alts, alt{terms: []int32{id}, weight: ix.cfg.partialWeight})
			}
		}
		return alts
	}
	if ix.cfg.compounds {
		if parts, ok := ix.split(t.word); ok {
			return append(alts, alt{terms: parts, weight: ix.cfg.partialWeight})
		}
	}
	if ix.cfg.partial {
		for _, id := range ix.prefixMatches(t.key) {
			alts = append(alts, alt{terms: []int32{id}, weight: ix.cfg.partialWeight})
		}
	}
	return alts
}

// synonymConcept is a matched thesaurus entry: the words as written, at full
// weight, and every other expression of its groups at the synonym weight.
func (ix *Index) synonymConcept(toks []qtoken, groups []int) concept {
	c := concept{key: exprKey(toks)}
	c.alts = ix.ownAlts(c.alts, toks)
	for _, g := range groups {
		for _, e := range ix.thes.groups[g] {
			if e.key == c.key {
				continue
			}
			if a, ok := ix.alt(e.terms, ix.cfg.synWeight); ok && !hasAlt(c.alts, a) {
				c.alts = append(c.alts, a)
			}
		}
	}
	return c
}

// hasAlt reports whether alts has a's terms at a's weight or more.
func hasAlt(alts []alt, a alt) bool {
	for _, b := range alts {
		if b.weight >= a.weight && slices.Equal(b.terms, a.terms) {
			return true
		}
	}
	return false
}

// alt is the alternative of the given terms, if the index knows them all:
// a synonym phrase is only worth its weight when every word of it can match.
func (ix *Index) alt(ts []string, weight float64) (alt, bool) {
	a := alt{weight: weight}
	for _, t := range ts {
		id, ok := ix.lookup(t)
		if !ok {
			return alt{}, false
		}
		a.terms = append(a.terms, id)
	}
	return a, len(a.terms) > 0
}

// maxCompound is the longest word split finds parts in: compounds people
// write are short ("stacktrace", "pullrequest"), and each split point of a
// word costs the whole word, so a long one would cost its square.
const maxCompound = 40

// split finds two known words that w is made of, the longest first part
// first: "codebase" is "code" and "base".
func (ix *Index) split(w string) ([]int32, bool) {
	if len(w) > maxCompound || !isASCIILower(w) {
		return nil, false
	}
	for i := len(w) - 3; i >= 3; i-- {
		l, r := w[:i], w[i:]
		if !meaningful(l) || !meaningful(r) {
			continue
		}
		li, lok := ix.lookup(ix.key(l))
		ri, rok := ix.lookup(ix.key(r))
		if lok && rok {
			return []int32{li, ri}, true
		}
	}
	return nil, false
}

// derivedForms returns the known terms that t is a prefix of, or that are
// a prefix of t, give or take a letter, sharing at least partialMin bytes:
// "attach" and "attachment", "notify" and "notification".
func (ix *Index) derivedForms(t string) []int32 {
	m := ix.cfg.partialMin
	if len(t) < m {
		return nil
	}
	var out []int32
	p := t[:m]
	for i := sort.SearchStrings(ix.vocab, p); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], p); i++ {
		v := ix.vocab[i]
		if v != t && commonPrefix(v, t) >= min(len(v), len(t))-1 {
			out = append(out, ix.vocabID(i))
		}
	}
	return out
}

// prefixMatches returns the known terms that share a prefix of at least
// partialMin bytes and two thirds of the shorter word with t.
func (ix *Index) prefixMatches(t string) []int32 {
	m := ix.cfg.partialMin
	if len(t) < m {
		return nil
	}
	var out []int32
	p := t[:m]
	for i := sort.SearchStrings(ix.vocab, p); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], p); i++ {
		v := ix.vocab[i]
		if commonPrefix(v, t) >= max(m, min(len(v), len(t))*2/3) {
			out = append(out, ix.vocabID(i))
		}
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
