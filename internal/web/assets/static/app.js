// The mcpgate settings page. Everything a server sent is inserted as text
// (textContent), never as markup. Requests carry the page's cookie; changes
// are POSTs with a JSON body.
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const signInAvailable = document.body.dataset.signin === "on";
  const openCatalogs = new Set(); // server IDs whose catalog is shown
  const confirming = new Set();   // server IDs asking "really remove?"
  const catalogs = new Map();     // server ID → {key, data}: the last catalog fetched
  // Errors are shown beside what caused them, and kept across redraws
  // until that thing succeeds.
  const cardErrors = new Map();   // server ID → message of its last failed action
  const toolErrors = new Map();   // server ID + "\n" + tool → message

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c) e.append(c);
    return e;
  }

  function notice(msg, bad) {
    const n = $("#notice");
    n.textContent = msg;
    n.classList.toggle("bad", !!bad);
    n.hidden = !msg;
  }

  async function api(method, path, body) {
    const opts = { method, headers: {}, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    let data = {};
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) {
      const err = new Error(data.error || ("request failed (" + res.status + ")"));
      err.field = data.field || ""; // the form field the refusal is about
      throw err;
    }
    return data;
  }

  const stateWords = {
    "ready": "Ready",
    "connecting": "Connecting…",
    "disconnected": "Not connected",
    "needs-auth": "Needs sign-in",
    "error": "Error",
  };

  function count(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // What the catalog line says. A count nobody has seen is unknown, never
  // "0"; a stored catalog says it is one, and how old.
  function catalogText(s) {
    if (s.tools < 0) {
      if (s.state === "connecting") return "Listing…";
      return "Unknown until connected";
    }
    let t = [count(s.tools, "tool"), count(s.prompts, "prompt"), count(s.resources, "resource")].join(" · ");
    if (s.stale) t += " (stale)";
    if (s.cached) t += " (cached" + (s.cachedAt ? ", listed " + ago(s.cachedAt) : "") + ")";
    return t;
  }

  function ago(iso) {
    const mins = Math.round((Date.now() - new Date(iso).getTime()) / 60000);
    if (!(mins >= 1)) return "just now";
    if (mins < 60) return mins + " min ago";
    const hours = Math.round(mins / 60);
    if (hours < 48) return hours + " h ago";
    return Math.round(hours / 24) + " days ago";
  }

  // formError shows msg inside form (in its .form-error), or clears it;
  // the field the message is about, if any, is marked invalid.
  function formError(form, msg, field) {
    let box = form.querySelector(".form-error");
    if (!box) {
      box = el("p", { class: "form-error", role: "alert" });
      form.append(box);
    }
    box.textContent = msg || "";
    box.hidden = !msg;
    for (const f of form.querySelectorAll("[aria-invalid]")) f.removeAttribute("aria-invalid");
    if (msg && field) field.setAttribute("aria-invalid", "true");
  }

  function action(label, name, id, extra) {
    return el("button", Object.assign({
      type: "button", "data-action": name, "data-server": id, text: label,
      onclick: () => run(name, id),
    }, extra || {}));
  }

  async function run(name, id, arg) {
    try {
      await runAction(name, id, arg);
      if (cardErrors.delete(id)) await refresh();
    } catch (e) {
      // Beside the card whose button failed, not only at the top.
      cardErrors.set(id, e.message);
      await refresh();
    }
  }

  async function runAction(name, id, arg) {
    {
      if (name === "signin") {
        // The tab opens now, while the click still counts (popup
        // blockers), and goes to its single-use address once the page has
        // it. Its opener is cut: the authorization server's page gets no
        // handle on this one.
        const tab = window.open("", "_blank");
        if (tab) tab.opener = null;
        try {
          const t = await api("POST", "/api/login", { server: id, issuer: arg || "" });
          if (tab) tab.location.href = t.url;
          else window.open(t.url, "_blank", "noopener");
        } catch (e) {
          if (tab) tab.close();
          throw e;
        }
        return;
      }
      if (name === "catalog") {
        if (openCatalogs.has(id)) openCatalogs.delete(id); else openCatalogs.add(id);
        await refresh();
        return;
      }
      if (name === "remove") { confirming.add(id); await refresh(); return; }
      if (name === "remove-cancel") { confirming.delete(id); await refresh(); return; }
      if (name === "remove-confirm") {
        confirming.delete(id);
        openCatalogs.delete(id);
        await api("POST", "/api/servers/" + encodeURIComponent(id) + "/remove", {});
        notice("Removed " + id + ".");
        await refresh();
        return;
      }
      await api("POST", "/api/servers/" + encodeURIComponent(id) + "/" + name, {});
      await refresh();
    }
  }

  function renderServer(s) {
    const li = el("li", { class: "card", id: "server-" + s.id, "data-state": s.state, "data-cached": s.cached ? "true" : null });
    const title = el("div", { class: "card-head" },
      el("h3", { text: s.name || s.id }),
      el("span", { class: "state state-" + s.state, text: stateWords[s.state] || s.state }));
    li.append(title);
    const meta = el("dl", { class: "meta" },
      el("dt", { text: "URL" }), el("dd", { class: "url", text: s.url }),
      el("dt", { text: "Auth" }), el("dd", { text: s.auth + (s.signedIn ? " (signed in)" : "") }),
      el("dt", { text: "Catalog" }),
      el("dd", { class: "counts", text: catalogText(s) }));
    if (s.disabled.length) {
      meta.append(el("dt", { text: "Disabled" }), el("dd", { text: s.disabled.join(", ") }));
    }
    if (!s.enabled) meta.append(el("dt", { text: "Server" }), el("dd", { text: "disabled in the config" }));
    li.append(meta);

    if (s.error) {
      const box = el("div", { class: "problem", role: "note" },
        el("p", { class: "problem-msg", text: s.error.message + (s.error.httpStatus ? " (HTTP " + s.error.httpStatus + ")" : "") }),
        el("p", { class: "problem-next", text: s.error.next }));
      li.append(box);
    }
    if (s.login) {
      const box = el("div", { class: "login login-" + s.login.state }, el("p", { class: "login-msg", text: s.login.message }));
      if (s.login.issuers && s.login.issuers.length) {
        const list = el("ul", { class: "issuers" });
        for (const iss of s.login.issuers) {
          list.append(el("li", {}, el("button", { type: "button", "data-action": "signin-issuer", text: "Sign in with " + iss,
            onclick: () => run("signin", s.id, iss) })));
        }
        box.append(list);
      }
      li.append(box);
    }

    const bar = el("div", { class: "actions" });
    const errAction = s.error && s.error.action;
    if (s.canSignIn && signInAvailable) {
      bar.append(action(s.signedIn && errAction !== "signin" ? "Sign in again" : "Sign in", "signin", s.id,
        { class: errAction === "signin" ? "primary" : "" }));
      if (s.signedIn) bar.append(action("Sign out", "logout", s.id));
    }
    if (s.state === "ready" || s.state === "connecting") {
      bar.append(action("Reconnect", "reconnect", s.id), action("Disconnect", "disconnect", s.id));
    } else if (s.state === "error") {
      bar.append(action("Reconnect", "reconnect", s.id, { class: "primary" }));
    } else if (s.enabled) {
      bar.append(action("Connect", "connect", s.id));
    }
    bar.append(action(openCatalogs.has(s.id) ? "Hide tools" : "Tools", "catalog", s.id,
      { "aria-expanded": openCatalogs.has(s.id) ? "true" : "false" }));
    if (confirming.has(s.id)) {
      bar.append(el("span", { class: "confirm", text: "Remove " + s.id + "?" }),
        action("Yes, remove", "remove-confirm", s.id, { class: "danger" }),
        action("Keep", "remove-cancel", s.id));
    } else {
      bar.append(action("Remove", "remove", s.id, { class: "danger" }));
    }
    li.append(bar);
    const failed = cardErrors.get(s.id);
    if (failed) li.append(el("p", { class: "form-error card-error", role: "alert", text: failed }));
    if (openCatalogs.has(s.id)) {
      const cat = el("div", { class: "catalog", "data-server": s.id }, el("p", { class: "muted", text: "Loading tools…" }));
      li.append(cat);
      // Fetched again only when what it shows may have changed.
      const key = [s.state, s.tools, s.disabled.join(",")].join("|");
      const cached = catalogs.get(s.id);
      if (cached && cached.key === key) drawCatalog(s.id, cat, cached.data);
      else loadCatalog(s.id, cat, key);
    }
    return li;
  }

  async function loadCatalog(id, box, key) {
    let data;
    try {
      data = await api("GET", "/api/servers/" + encodeURIComponent(id) + "/tools");
    } catch (e) {
      catalogs.delete(id);
      box.replaceChildren(el("p", { class: "bad", text: e.message }));
      return;
    }
    catalogs.set(id, { key, data });
    drawCatalog(id, box, data);
  }

  function drawCatalog(id, box, data) {
    const list = el("ul", { class: "tools" });
    for (const t of data.tools) {
      const sw = el("input", { type: "checkbox", class: "tool-switch", role: "switch", "data-tool": t.name,
        "aria-label": "Enable " + t.name, checked: t.enabled });
      const key = id + "\n" + t.name;
      sw.addEventListener("change", async () => {
        sw.disabled = true;
        try {
          await api("POST", "/api/servers/" + encodeURIComponent(id) + "/tools", { tool: t.name, enabled: sw.checked });
          toolErrors.delete(key);
          notice((sw.checked ? "Enabled " : "Disabled ") + t.name + ".");
          await refresh();
        } catch (e) {
          sw.checked = !sw.checked;
          toolErrors.set(key, e.message);
          drawCatalog(id, box, data);
        } finally {
          sw.disabled = false;
        }
      });
      const item = el("li", { class: "tool" + (t.enabled ? "" : " off"), "data-tool": t.name },
        el("label", { class: "tool-head" }, sw, el("code", { text: t.name }),
          t.title ? el("span", { class: "muted", text: " " + t.title }) : null));
      if (toolErrors.has(key)) item.append(el("p", { class: "form-error tool-error", role: "alert", text: toolErrors.get(key) }));
      if (!t.enabled) item.append(el("p", { class: "muted", text: "Disabled: hidden from agents. Enable it to see its details." }));
      if (t.description) item.append(el("p", { class: "desc", text: t.description }));
      if (t.annotations.length) item.append(el("p", { class: "tags", text: t.annotations.join(" · ") }));
      if (t.params.length) {
        const ps = el("ul", { class: "params" });
        for (const p of t.params) {
          ps.append(el("li", {}, el("code", { text: p.name }),
            el("span", { class: "muted", text: " " + (p.type || "any") + (p.required ? ", required" : "") }),
            p.description ? el("span", { text: " — " + p.description }) : null));
        }
        item.append(ps);
      }
      list.append(item);
    }
    if (!data.tools.length) list.append(el("li", { class: "muted", text: "This server has no tools." }));
    box.replaceChildren(list);
  }

  // Pending questions (form elicitation) from a server during a call.
  function renderPending(p) {
    const form = el("form", { class: "card pending", id: "pending-" + p.id, "data-server": p.server, novalidate: true });
    form.append(el("div", { class: "card-head" }, el("h3", { text: p.server + " asks" })),
      el("p", { class: "question", text: p.message }));
    const inputs = {};
    for (const f of p.fields) {
      const label = f.title || f.name;
      let input, hint = "";
      const choiceTitle = (i) => (f.enumTitles && f.enumTitles[i]) || f.enum[i];
      if (f.type === "boolean") {
        input = el("input", { type: "checkbox", name: f.name, checked: f.default === true });
        form.append(el("label", { class: "inline" }, input, el("span", { text: label })));
      } else if (f.type === "array") {
        // A multi-select: one checkbox per choice; the answer is the list
        // of the values ticked.
        const picked = Array.isArray(f.default) ? f.default : [];
        input = f.enum.map((v, i) => el("input", { type: "checkbox", name: f.name, value: v, checked: picked.includes(v) }));
        form.append(el("fieldset", { "data-field": f.name },
          el("legend", { text: label + (f.required ? " (required)" : "") }),
          ...input.map((box, i) => el("label", { class: "inline" }, box, el("span", { text: choiceTitle(i) }))),
          f.description ? el("small", { class: "muted", text: f.description }) : null));
      } else {
        if (f.enum && f.enum.length) {
          input = el("select", { name: f.name, required: f.required });
          if (!f.required) input.append(el("option", { value: "", text: "—" }));
          f.enum.forEach((v, i) => input.append(el("option", { value: v, text: choiceTitle(i), selected: v === f.default })));
        } else {
          const h = fieldHint(f);
          input = el("input", Object.assign({
            name: f.name, required: f.required,
            type: f.type === "string" ? "text" : "number",
            step: f.type === "integer" ? "1" : (f.type === "number" ? "any" : undefined),
            inputmode: f.type === "integer" ? "numeric" : (f.type === "number" ? "decimal" : undefined),
            min: f.minimum, max: f.maximum, minlength: f.minLength, maxlength: f.maxLength,
          }, h.attrs));
          if (f.default !== undefined && f.default !== null) input.value = String(f.default);
          hint = h.text;
        }
        form.append(el("label", {}, el("span", { text: label + (f.required ? " (required)" : "") }), input,
          f.description ? el("small", { class: "muted", text: f.description }) : null,
          hint ? el("small", { class: "hint", text: hint }) : null));
      }
      inputs[f.name] = [f, input];
    }
    const errBox = el("p", { class: "bad", role: "alert", hidden: true });
    form.append(errBox);
    const send = async (action) => {
      const body = { action };
      if (action === "accept") {
        if (!form.reportValidity()) return;
        body.content = {};
        for (const [name, [f, input]] of Object.entries(inputs)) {
          if (f.type === "boolean") body.content[name] = input.checked;
          else if (f.type === "array") body.content[name] = input.filter((box) => box.checked).map((box) => box.value);
          else if (input.value === "") continue;
          else if (f.type === "string") body.content[name] = input.value;
          else body.content[name] = Number(input.value);
        }
      }
      try {
        await api("POST", "/api/pending/" + encodeURIComponent(p.id), body);
        notice(action === "accept" ? "Answer sent to " + p.server + "." : "Told " + p.server + ": " + action + ".");
        await refresh();
      } catch (e) {
        errBox.textContent = e.message;
        errBox.hidden = false;
      }
    };
    form.addEventListener("submit", (e) => { e.preventDefault(); send("accept"); });
    form.append(el("div", { class: "actions" },
      el("button", { type: "submit", class: "primary", "data-action": "accept", text: "Send" }),
      el("button", { type: "button", "data-action": "decline", text: "Decline", onclick: () => send("decline") }),
      el("button", { type: "button", "data-action": "cancel", text: "Not now", onclick: () => send("cancel") })));
    return el("li", {}, form);
  }

  // fieldHint is what a text or number field of a question takes, by its
  // JSON Schema format and bounds: the input's type, pattern and
  // placeholder, and a line saying it in words (as the question page does).
  function fieldHint(f) {
    const attrs = {};
    const words = [];
    if (f.type === "string") {
      switch (f.format) {
        case "email":
          Object.assign(attrs, { type: "email", inputmode: "email", autocomplete: "email", placeholder: "name@example.com" });
          words.push("An email address");
          break;
        case "uri":
          Object.assign(attrs, { type: "url", inputmode: "url", placeholder: "https://…" });
          words.push("A full address, like https://example.com/");
          break;
        case "date":
          Object.assign(attrs, { type: "date" });
          words.push("A date, like 2026-12-31");
          break;
        case "date-time":
          // No browser control takes a time with its offset from UTC.
          Object.assign(attrs, { pattern: rfc3339Pattern, placeholder: "2026-12-31T09:30:00Z" });
          words.push("A date and time with its offset from UTC, like 2026-12-31T09:30:00Z");
          break;
      }
      if (f.minLength != null && f.maxLength != null) words.push(f.minLength + " to " + f.maxLength + " characters");
      else if (f.minLength != null) words.push("At least " + f.minLength + " characters");
      else if (f.maxLength != null) words.push("At most " + f.maxLength + " characters");
    } else {
      const what = f.type === "integer" ? "A whole number" : "A number";
      if (f.minimum != null && f.maximum != null) words.push(what + " from " + f.minimum + " to " + f.maximum);
      else if (f.minimum != null) words.push(what + ", " + f.minimum + " or more");
      else if (f.maximum != null) words.push(what + ", " + f.maximum + " or less");
      else words.push(what);
    }
    return { attrs, text: words.join("; ") };
  }
  const rfc3339Pattern = "\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+\\-]\\d{2}:\\d{2})";

  // A card being filled in is kept as it is; only new and gone ones change.
  function syncPending(list) {
    const ul = $("#pending");
    const want = new Set(list.map((p) => "pending-" + p.id));
    for (const li of Array.from(ul.children)) {
      const f = li.querySelector("form");
      if (!f || !want.has(f.id)) li.remove();
    }
    for (const p of list) if (!document.getElementById("pending-" + p.id)) ul.append(renderPending(p));
    $("#pending-section").hidden = list.length === 0;
  }

  let refreshing = null, again = false;
  async function refresh() {
    if (refreshing) { again = true; return refreshing; }
    refreshing = (async () => {
      try {
        do {
          again = false;
          try {
            const data = await api("GET", "/api/servers");
            const ul = $("#servers");
            const items = data.servers.map(renderServer);
            ul.replaceChildren(...items);
            $("#empty").hidden = items.length > 0;
            syncPending((await api("GET", "/api/pending")).pending);
          } catch (e) {
            notice("Cannot reach mcpgate: " + e.message, true);
          }
        } while (again);
      } finally {
        // Cleared in the same step as the last look at again: a refresh
        // asked for after it starts a new one instead of joining one
        // that has already drawn (a failed action's error was lost so).
        refreshing = null;
      }
    })();
    return refreshing;
  }

  // Live updates: server-sent events, else polling.
  let poll = null;
  function live() {
    const label = $("#live");
    if (!window.EventSource) { startPolling(); return; }
    const es = new EventSource("/events");
    es.addEventListener("changed", () => { label.textContent = "live"; label.className = "live on"; stopPolling(); refresh(); });
    es.onerror = () => { label.textContent = "reconnecting…"; label.className = "live"; startPolling(); };
  }
  function startPolling() { if (!poll) poll = setInterval(refresh, 3000); }
  function stopPolling() { if (poll) { clearInterval(poll); poll = null; } }

  // Add a server.
  $("#add-auth").addEventListener("change", (e) => { $("#add-token-label").hidden = e.target.value !== "bearer"; });
  // What a field that fails the browser's own check must hold, said
  // inside the form (the browser's bubble is gone as soon as it shows).
  const addWants = {
    id: "Name: lower-case letters, digits, - and _, up to 32, starting with a letter or digit.",
    url: "URL: a full address, like https://mcp.example.com/mcp.",
    bearerToken: "Token: a bearer server needs its token.",
  };
  $("#add-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = e.target;
    f.bearerToken.required = f.auth.value === "bearer";
    const bad = Array.from(f.elements).find((x) => x.willValidate && !x.checkValidity());
    if (bad) {
      formError(f, addWants[bad.name] || bad.validationMessage, bad);
      bad.focus();
      return;
    }
    const body = { id: f.id.value.trim(), url: f.url.value.trim(), auth: f.auth.value, headers: f.headers.value };
    if (body.auth === "bearer") body.bearerToken = f.bearerToken.value;
    try {
      await api("POST", "/api/servers", body);
      f.reset();
      formError(f, "");
      $("#add-token-label").hidden = true;
      notice("Added " + body.id + "; connecting…");
      await refresh();
    } catch (err) {
      formError(f, err.message, err.field && f.elements[err.field]);
    }
  });

  // Import: preview, then confirm.
  $("#import-file").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (file) $("#import-text").value = await file.text();
  });
  $("#import-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = $("#import-result");
    const body = { text: $("#import-text").value, replace: $("#import-replace").checked };
    let p;
    const form = e.target;
    if (!body.text.trim()) {
      formError(form, "Paste a file's JSON, or choose the file, first.", $("#import-text"));
      return;
    }
    try {
      p = await api("POST", "/api/import/preview", body);
      formError(form, "");
    } catch (err) {
      out.hidden = true;
      formError(form, err.message, $("#import-text"));
      return;
    }
    const parts = [el("h3", { text: "Preview (" + p.format + ")" })];
    if (p.servers.length) {
      const ul = el("ul", { class: "import-servers" });
      for (const s of p.servers) {
        let sends = "";
        if (s.headers.length) sends += "; headers " + s.headers.join(", ");
        if (s.env.length) sends += "; reads $" + s.env.join(", $");
        ul.append(el("li", { "data-import": s.id }, el("code", { text: s.id }),
          el("span", { text: " " + s.url + " (auth " + s.auth + sends + ")" + (s.exists ? " — already configured" + (body.replace ? ", will be replaced" : ", refused unless you replace") : "") })));
      }
      parts.push(el("p", { text: "Will come in:" }), ul);
      if (p.env.length) {
        // A project's file can name any variable; its value would go to
        // the file's URL with every request. The person allows them here.
        parts.push(el("label", { class: "import-env" },
          el("input", { type: "checkbox", id: "import-allow-env" }),
          el("span", { text: " Send the values of $" + p.env.join(", $") + " from mcpgate's environment to these servers with every request" })));
      }
    } else {
      parts.push(el("p", { text: "Nothing to import: the file has no remote server." }));
    }
    if (p.skipped.length) {
      const ul = el("ul", { class: "import-skipped" });
      for (const s of p.skipped) ul.append(el("li", { "data-skipped": s.name }, el("code", { text: s.name }), el("span", { text: " — " + s.text })));
      parts.push(el("p", { text: "Skipped:" }), ul);
    }
    if (p.notes.length) {
      const ul = el("ul", { class: "import-notes" });
      for (const n of p.notes) ul.append(el("li", {}, el("code", { text: n.name }), el("span", { text: " — " + n.text })));
      parts.push(el("p", { text: "To do afterwards:" }), ul);
    }
    if (p.servers.length) {
      parts.push(el("div", { class: "actions" },
        el("button", { type: "button", id: "import-confirm", class: "primary", text: "Import " + p.servers.length + (p.servers.length === 1 ? " server" : " servers"),
          onclick: async () => {
            try {
              const allow = $("#import-allow-env");
              const r = await api("POST", "/api/import", Object.assign({}, body, { allowEnv: allow && allow.checked ? p.env : [] }));
              out.replaceChildren(el("p", { text: "Imported " + r.imported.join(", ") + "." }));
              $("#import-text").value = "";
              await refresh();
            } catch (err) {
              // Beside the button that failed, in the preview.
              let box = $("#import-confirm-error");
              if (!box) {
                box = el("p", { id: "import-confirm-error", class: "form-error", role: "alert" });
                out.querySelector(".actions").before(box);
              }
              box.textContent = err.message;
            }
          } }),
        el("button", { type: "button", text: "Cancel", onclick: () => { out.hidden = true; } })));
    }
    out.replaceChildren(...parts);
    out.hidden = false;
  });

  // The request log drawer, read every 2 s while it is open.
  let logTimer = null;
  function bytes(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB"; }
  async function loadLog() {
    try {
      const data = await api("GET", "/api/log?last=200");
      const rows = data.entries.slice().reverse().map((e) => el("tr", { class: e.outcome === "ok" ? "" : "bad" },
        el("td", { text: new Date(e.time).toLocaleTimeString() }), el("td", { text: e.server }),
        el("td", { text: e.method }), el("td", { text: e.tool || "" }), el("td", { text: e.durationMs + " ms" }),
        el("td", { text: e.outcome }), el("td", { text: e.httpStatus ? String(e.httpStatus) : "–" }),
        el("td", { text: bytes(e.bytesIn) + " / " + bytes(e.bytesOut) })));
      if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: "8", class: "muted", text: "No request yet." })));
      $("#log-rows").replaceChildren(...rows);
    } catch (e) {
      $("#log-rows").replaceChildren(el("tr", {}, el("td", { colspan: "8", class: "bad", text: e.message })));
    }
  }
  function showLog(open) {
    $("#log").hidden = !open;
    $("#log-toggle").setAttribute("aria-expanded", open ? "true" : "false");
    if (logTimer) { clearInterval(logTimer); logTimer = null; }
    if (open) { loadLog(); logTimer = setInterval(loadLog, 2000); }
  }
  $("#log-toggle").addEventListener("click", () => showLog($("#log").hidden));
  $("#log-close").addEventListener("click", () => showLog(false));

  refresh();
  live();
})();
