package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// words splits s into lower-case words: on anything that is not a letter or
// a digit (so snake_case, kebab-case, dotted.names and paths), between a
// lower-case and an upper-case letter (camelCase), before the last capital
// of a run of capitals followed by a lower-case letter (HTTPServer), and
// between letters and digits. A run that mixes letters and digits is also
// kept whole ("r2", "oauth2", "k8s"), because its parts alone mean little.
func words(s string) []string { return appendWords(nil, s) }

// appendWords appends the words of s to out, as words splits them.
func appendWords(out []string, s string) []string {
	for {
		var run string
		if run, s = nextRun(s); run == "" {
			return out
		}
		out = splitIdent(run, out)
	}
}

// nextRun returns the first run of letters and digits of s and what
// follows it, or "" when s has none.
func nextRun(s string) (run, rest string) {
	// Skip separators.
	i := 0
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiAlnum(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isAlnum(r) {
			break
		}
		i += n
	}
	s = s[i:]
	// Take one alphanumeric run.
	j := 0
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if !asciiAlnum(c) {
				break
			}
			j++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if !isAlnum(r) {
			break
		}
		j += n
	}
	return s[:j], s[j:]
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func asciiAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// splitIdent appends the lower-cased parts of the identifier run to out.
func splitIdent(run string, out []string) []string {
	if isASCIILower(run) {
		return append(out, run) // most words of a description
	}
	n0 := len(out)
	letters, digits := false, false
	start := 0
	prev := rune(-1)
	for i := 0; i < len(run); {
		r, w := utf8.DecodeRuneInString(run[i:])
		if unicode.IsDigit(r) {
			digits = true
		} else {
			letters = true
		}
		if prev >= 0 {
			cut := false
			switch {
			case unicode.IsDigit(prev) != unicode.IsDigit(r):
				cut = true
			case unicode.IsLower(prev) && unicode.IsUpper(r):
				cut = true
			case unicode.IsUpper(prev) && unicode.IsUpper(r):
				// "HTTPServer", but not the plural acronym "PRs".
				r1, w1 := utf8.DecodeRuneInString(run[i+w:])
				r2, _ := utf8.DecodeRuneInString(run[i+w+w1:])
				cut = unicode.IsLower(r1) && unicode.IsLower(r2)
			}
			if cut {
				out = append(out, lowerPart(run[start:i]))
				start = i
			}
		}
		prev = r
		i += w
	}
	out = append(out, lowerPart(run[start:]))
	if letters && digits && len(out)-n0 > 1 {
		out = append(out, strings.ToLower(run))
	}
	return out
}

// lowerPart lower-cases one part of an identifier, turning a plural acronym
// ("PRs", "IDs", "URLs") into its singular, which the stemmer cannot do once
// the case is gone ("prs").
func lowerPart(p string) string {
	if n := len(p); n >= 3 && p[n-1] == 's' {
		caps := true
		for _, r := range p[:n-1] {
			caps = caps && unicode.IsUpper(r)
		}
		if caps {
			p = p[:n-1]
		}
	}
	return strings.ToLower(p)
}

// meaningful reports whether a lower-case word can be a search term: not a
// stop word, not a bare number, not a single letter.
func meaningful(w string) bool {
	if stopwords[w] {
		return false
	}
	if utf8.RuneCountInString(w) < 2 {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// terms returns the search terms of s: its meaningful words, stemmed.
func terms(s string) []string {
	ws := words(s)
	out := ws[:0]
	for _, w := range ws {
		if meaningful(w) {
			out = append(out, stem(w))
		}
	}
	return out
}

// stem reduces inflected forms to one key: plurals ("issues", "branches",
// "repositories"), past tense and participles ("merged", "committed",
// "listing"), and a final silent e, so that "create", "creates", "created"
// and "creating" meet. It is deliberately lighter than Porter: derivational
// suffixes ("-tion", "-ment") are left alone, because tool names use them as
// distinct nouns. The key is not always a word ("creat"); it only has to be
// the same for the forms that should meet.
func stem(w string) string {
	if base, ok := irregular[w]; ok {
		w = base
	}
	if len(w) <= 3 || !isASCIILower(w) {
		return w
	}
	w = american(w)
	orig := w
	// Plurals and third person.
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), singularIs(w):
	case strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zzes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Past tense and participles.
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ing") && len(w) >= 6 && hasVowel(w[:len(w)-3]):
		w = undouble(w[:len(w)-3])
	case pastTense(w):
		w = undouble(w[:len(w)-2])
	}
	// A word that itself ends in "ed" keeps meeting its forms:
	// "embedding" and "embedded" leave "embed", as "embed" is stemmed.
	if w != orig && pastTense(w) {
		w = w[:len(w)-2]
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 {
		w = w[:len(w)-1]
	}
	// A final double l after more than one syllable is one l, as in
	// Porter's stemmer: "cancelled" and "cancel", "labelling" and
	// "label" meet ("installed" and "install" meet as "instal"), while
	// "call", "fill" and "spell" stay whole.
	if strings.HasSuffix(w, "ll") && measure(w) > 1 {
		w = w[:len(w)-1]
	}
	// A final y after a consonant is an i, as the plural's "ies" and a
	// dropped "e" leave it: "cookie", "cookies"; "query", "queries".
	if n := len(w); n > 3 && w[n-1] == 'y' && !strings.ContainsRune("aeiou", rune(w[n-2])) {
		w = w[:n-1] + "i"
	}
	return w
}

// measure is Porter's m: how many vowel-consonant sequences w has, so
// "tr" 0, "call" 1, "cancel" 2.
func measure(w string) int {
	m := 0
	prevVowel := false
	for i := 0; i < len(w); i++ {
		v := strings.IndexByte("aeiou", w[i]) >= 0 || (w[i] == 'y' && i > 0 && !prevVowel)
		if prevVowel && !v {
			m++
		}
		prevVowel = v
	}
	return m
}

// american spells a British form the American way, so that "colour",
// "organisation", "authorised" and "catalogue" meet "color",
// "organization", "authorized" and "catalog". -ise becomes -ize only in
// words of seven letters or more, so "raise", "rise", "advise" and "revise"
// stay apart from anything else.
func american(w string) string {
	if a, ok := britishWords[w]; ok {
		return a
	}
	for _, r := range britishEndings {
		if strings.HasSuffix(w, r.british) && len(w)-len(r.british) >= r.min {
			return w[:len(w)-len(r.british)] + r.american
		}
	}
	return w
}

var britishEndings = []struct {
	british, american string
	min               int // letters before the ending, at least
}{
	{"isations", "izations", 3}, {"isation", "ization", 3},
	{"ising", "izing", 4}, {"ised", "ized", 4}, {"ises", "izes", 4}, {"iser", "izer", 4}, {"isers", "izers", 4}, {"ise", "ize", 4},
	{"ysing", "yzing", 3}, {"ysed", "yzed", 3}, {"yses", "yzes", 6}, {"yse", "yze", 3},
}

// britishWords are British spellings that no ending rule catches, each
// with its American form. (A doubled l, "cancelled", "travelling",
// "enrol" and "enroll", meets by stem's rule for a final double l.)
var britishWords = func() map[string]string {
	m := map[string]string{}
	for _, pair := range strings.Fields(`
		colour:color colours:colors coloured:colored behaviour:behavior behaviours:behaviors
		favourite:favorite favourites:favorites favour:favor honour:honor labour:labor
		neighbour:neighbor neighbours:neighbors flavour:flavor rumour:rumor humour:humor
		centre:center centres:centers centred:centered metre:meter metres:meters litre:liter
		fibre:fiber theatre:theater licence:license licences:licenses defence:defense
		offence:offense catalogue:catalog catalogues:catalogs dialogue:dialog dialogues:dialogs
		programme:program programmes:programs analogue:analog grey:gray greys:grays
		cheque:check cheques:checks enrolment:enrollment fulfilment:fulfillment
		instalment:installment queueing:queuing judgement:judgment ageing:aging`) {
		b, a, _ := strings.Cut(pair, ":")
		m[b] = a
	}
	return m
}()

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// pastTense says w ends in an "ed" the stemmer takes off: after a stem of
// three letters or more that has a vowel.
func pastTense(w string) bool {
	return strings.HasSuffix(w, "ed") && len(w) >= 5 && hasVowel(w[:len(w)-2])
}

// singularIs says a word ending in "is" is one thing ("analysis", "axis",
// "redis"), not the plural of a word ending in i ("apis", "uris",
// "wikis", "emojis").
func singularIs(w string) bool {
	return strings.HasSuffix(w, "sis") || strings.HasSuffix(w, "xis") || singularsInIs[w]
}

// singularsInIs are the words ending in "is" after neither s nor x that
// software text uses as singulars.
var singularsInIs = map[string]bool{"redis": true, "iris": true, "tennis": true, "travis": true, "paris": true}

// undouble turns "committ" into "commit" and "stopp" into "stop", but keeps
// "add", "call", "pass", "buzz" and "diff" whole.
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouflsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// irregular maps common irregular forms to the form the regular rules stem.
var irregular = map[string]string{
	"began": "begin", "begun": "begin", "bought": "buy", "brought": "bring",
	"built": "build", "chose": "choose", "chosen": "choose", "did": "do",
	"done": "do", "drew": "draw", "drawn": "draw", "found": "find",
	"gave": "give", "given": "give", "got": "get", "gotten": "get",
	"held": "hold", "hidden": "hide", "kept": "keep", "knew": "know",
	"known": "know", "led": "lead", "lost": "lose", "made": "make",
	"paid": "pay", "ran": "run", "rang": "ring", "said": "say", "saw": "see",
	"seen": "see", "sent": "send", "shown": "show", "sold": "sell",
	"spent": "spend", "spoke": "speak", "spoken": "speak", "stood": "stand",
	"taken": "take", "took": "take", "taught": "teach", "thought": "think",
	"told": "tell", "threw": "throw", "thrown": "throw", "understood": "understand",
	"woke": "wake", "wrote": "write", "written": "write", "children": "child",
	"people": "person", "indices": "index", "analyses": "analysis",
	"using": "use", "used": "use", "uses": "use",
}

// stopwords are words that carry no meaning for finding a tool: English
// function words (the NLTK list) and the fragments contractions split into.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about above after again against ain all am an and any are aren as at
		be because been before being below between both but by can couldn d did
		didn do does doesn doing don down during each few for from further had
		hadn has hasn have haven having he her here hers herself him himself his
		how i if in into is isn it its itself just ll m ma me mightn more most
		mustn my myself needn no nor not now o of off on once only or other our
		ours ourselves out over own re s same shan she should shouldn so some
		such t than that the their theirs them themselves then there these they
		this those through to too under until up very ve was wasn we were weren
		what when where which while who whom why will with won wouldn y you your
		yours yourself yourselves
		could would please let lets also via whose`) {
		m[w] = true
	}
	return m
}()
