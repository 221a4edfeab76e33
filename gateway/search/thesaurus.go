package search

import "strings"

// thesaurusGroups are the words and phrases that mean one thing to someone
// looking for a tool: the actions and objects that tool catalogs name, and
// the ways people and models ask for them. Each line is one group,
// expressions separated by "|". A word may sit in several groups ("show" is
// both listing and getting one thing). Every group is generic vocabulary;
// RESULTS.md records what each was worth on the tuning queries.
var thesaurusGroups = []string{
	// Actions.
	"create|add|new|make|open a|open an|file a|file an|spin up|set up|setup|start a|generate|insert|append|leave a|leave an|write up|raise|declare",
	"delete|remove|drop|destroy|erase|purge|forget|discard|get rid of",
	"list|show all|get all|enumerate|what are",
	"get|fetch|read|retrieve|view|show|give me|display|see",
	"update|edit|modify|change|set|patch|alter|adjust|tweak|bump",
	"search|find|query|look up|look for|look through|look in|lookup|locate",
	"send|post|message|notify|tell",
	"run|trigger|kick off|execute|dispatch|start|launch|invoke",
	"cancel|stop|abort|terminate|kill|halt",
	"restart|reboot|reload|bounce",
	"merge|squash",
	"assign|reassign|hand over|hand off|delegate|assignee",
	"move|transfer|relocate",
	"rename|move",
	"copy|clone|duplicate|fork",
	"approve|review|sign off|lgtm",
	"close|resolve|complete|finish",
	"archive|shelve",
	"deploy|deployment|ship|roll out|rollout|publish",
	"download|export",
	"upload|attach",
	"subscribe|watch|follow",
	"star|favorite|bookmark",
	"mute|silence|snooze|suppress",
	"link|relation|relate|depend|dependency|blocker",
	"comment|reply|note|remark|respond",
	"schedule|book",
	"diff|difference|compare|what changed|changes",
	"how many|count|number of|total",
	"sign in|signed in|log in|logged in|login|authenticate|authenticated|auth|whoami|who am i",
	"remember|memorize|memory|recall|knowledge",
	"click|press|tap",
	"type|enter|fill|fill in|input",
	"navigate|go to|visit|browse",
	"hover|mouse over",
	"wait|sleep|pause",
	"filter|rule|automatically|automation",
	// Objects.
	"pull request|pr|merge request|mr",
	"issue|bug|ticket|defect",
	"repo|repository",
	"doc|document|page|wiki",
	"documentation|docs|guide|manual|how to|how do i",
	"log|output|stdout|stderr",
	"user|member|person|account|teammate|colleague",
	"team|group|squad",
	"channel|room|conversation|chat",
	"message|msg|dm|chat",
	"email|mail|e-mail|inbox",
	"draft|compose|unsent",
	"file|contents",
	"folder|directory|dir",
	"branch|ref",
	"commit|revision|changeset|sha",
	"release|version",
	"latest|newest|most recent|recent",
	"current|active|ongoing|in progress",
	"event|meeting|appointment",
	"calendar|agenda",
	"sprint|cycle|iteration",
	"error|exception|crash|failure|fail|broken",
	"alert|alarm|warning",
	"incident|outage|downtime",
	"database|db",
	"postgres|postgresql|pg|psql",
	"sql|query|select",
	"migration|migrate|schema change|alter table|ddl",
	"code|source code|script|snippet",
	"javascript|js",
	"typescript|ts",
	"secret|credential|password|token|leak|leaked",
	"permission|access|role|privilege|restriction",
	"vulnerability|vulnerable|cve|advisory",
	"ci|continuous integration|workflow|pipeline|build",
	"trace|stack trace|stacktrace|traceback|backtrace",
	"history|changelog|activity|timeline|audit|what changed",
	"child|children|nested|sub|subpage|descendant",
	"status|state|progress|stage",
	"priority|urgent|urgency|severity|critical",
	"entry|item|row|record",
	"screenshot|screen capture|capture",
	"image|picture|png|jpg|jpeg|render",
	"dialog|popup|modal|prompt|confirm",
	"dropdown|select|option|choose|pick",
	"network request|api call|http request|xhr",
	"console|devtools",
	"kubernetes|k8s|kube|kubectl",
	"pod|container",
	"namespace|ns",
	"usage|top|consumption|utilization",
	"dashboard|panel|chart",
	"oncall|on call|on-call|pager|rotation|shift",
	"uptime|monitor|health check|ping",
	"annotation|annotate|marker",
	"bucket|storage|blob|object storage",
	"kv|key value|key-value",
	"variable|var|env var|environment variable|setting",
	"module|library|package",
	"provider|plugin|integration",
	"coupon|discount|promo|promotion code",
	"subscription|membership",
	"invoice|bill|billing",
	"refund|reimburse",
	"price|pricing|cost",
}

// thesaurus finds expressions of thesaurusGroups in a query.
type thesaurus struct {
	groups [][]expr
	byKey  map[string][]int // expression key to the groups holding it
	maxLen int              // most tokens in one expression
}

type expr struct {
	key   string   // the tokens' keys joined by spaces
	terms []string // the meaningful tokens' keys
}

func newThesaurus(lines []string, tokens func(string) []qtoken) *thesaurus {
	th := &thesaurus{byKey: map[string][]int{}}
	for g, line := range lines {
		var group []expr
		for _, s := range strings.Split(line, "|") {
			toks := tokens(s)
			e := expr{key: exprKey(toks)}
			for _, t := range toks {
				if t.term {
					e.terms = append(e.terms, t.key)
				}
			}
			group = append(group, e)
			if gs := th.byKey[e.key]; len(gs) == 0 || gs[len(gs)-1] != g {
				th.byKey[e.key] = append(gs, g)
			}
			th.maxLen = max(th.maxLen, len(toks))
		}
		th.groups = append(th.groups, group)
	}
	return th
}

func exprKey(toks []qtoken) string {
	keys := make([]string, len(toks))
	for i, t := range toks {
		keys[i] = t.key
	}
	return strings.Join(keys, " ")
}

// match returns the length of the longest expression starting at toks[0]
// and the groups that hold it, or 0. A nil thesaurus matches nothing.
func (th *thesaurus) match(toks []qtoken) (int, []int) {
	if th == nil {
		return 0, nil
	}
	for n := min(th.maxLen, len(toks)); n >= 1; n-- {
		if n == 1 && !toks[0].term {
			break
		}
		if gs, ok := th.byKey[exprKey(toks[:n])]; ok {
			return n, gs
		}
	}
	return 0, nil
}
