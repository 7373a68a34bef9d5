// act.js: what the page does besides reading, when runner view was started
// to act: the form that starts a run, the questions of a waiting run as a
// form, cancel and resume. Every request carries the token the view printed
// in its address (kept here, taken out of the address bar), in a header:
// never a cookie, so no other site's page can send it.
"use strict";
(function () {
  const KEY = "runner-view-token";
  const q = new URLSearchParams(location.search);
  if (q.has("token")) {
    localStorage.setItem(KEY, q.get("token"));
    q.delete("token");
    history.replaceState(null, "", location.pathname + ([...q].length ? "?" + q : "") + location.hash);
  }

  // post sends an acting request; it resolves to {ok, status, data, text}.
  async function post(path, body) {
    const r = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Runner-Token": localStorage.getItem(KEY) || "" },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    let data = null;
    try { data = JSON.parse(text); } catch (e) { /* a plain-text refusal */ }
    return { ok: r.ok, status: r.status, data, text: text.trim() };
  }
  const refusal = res => res.status === 403 ? res.text + "." : res.text;

  // ---- the start form ----
  async function startPage(K, params) {
    const { el, api, go, setCrumbs, app } = K;
    setCrumbs(el("a", { href: "#/" }, "Runs"), "start a run");
    document.title = "start a run · runner view";
    document.body.setAttribute("data-page", "start");
    const data = await api("/api/specs");
    if (!data.acting) {
      app.replaceChildren(el("div", { class: "card" }, el("h1", {}, "Start a run"), el("p", {}, "This view only reads: start runner view without --read-only (and with --specs DIR) to start runs from the page.")));
      return;
    }
    if (!data.specs.length) {
      app.replaceChildren(el("div", { class: "card" }, el("h1", {}, "Start a run"), el("p", {}, data.folder ? `No spec in ${data.folder}.` : "Start runner view with --specs DIR (for example --specs examples) to list specs here.")));
      return;
    }
    const pick = el("select", { id: "start-spec", "aria-label": "spec" }, data.specs.map(s => el("option", { value: s.path }, `${s.name} — ${s.path}`)));
    pick.value = params.get("spec") && data.specs.some(s => s.path === params.get("spec")) ? params.get("spec") : data.specs[0].path;
    const formBox = el("div");
    pick.onchange = () => { history.replaceState(null, "", "#/start?" + new URLSearchParams({ spec: pick.value })); draw(); };
    app.replaceChildren(
      el("div", { class: "pagehead" }, el("div", {}, el("h1", {}, "Start a run"), el("div", { class: "sub mono" }, data.folder))),
      el("div", { class: "card" }, el("label", { class: "field" }, el("span", { class: "flabel" }, "Spec"), pick), formBox),
      studiesCard(K, data));
    draw();

    async function draw() {
      const want = pick.value;
      formBox.replaceChildren(el("p", { class: "loading" }, "Reading the spec…"));
      const sp = await api("/api/specs?path=" + encodeURIComponent(want));
      if (pick.value !== want) return; // another was picked meanwhile
      const general = el("div", { id: "start-problems", class: "problems", role: "alert" });
      if (sp.problems) {
        formBox.replaceChildren(el("p", {}, "This spec is invalid, and cannot be started:"), el("pre", { class: "problems" }, sp.problems));
        return;
      }
      // What a domain allows, said beside the field: a start checks it.
      const domainNote = d => !d ? "" : [
        d.enum ? "one of " + d.enum.map(String).join(", ") : "",
        d.minimum !== undefined ? "at least " + d.minimum : "",
        d.maximum !== undefined ? "at most " + d.maximum : "",
        d.pattern ? "matching " + d.pattern : ""].filter(Boolean).join("; ");
      const errBox = field => el("div", { class: "field-error", "data-field": field, id: "err-" + field.replace(/[^\w-]/g, "_") });
      const inputs = sp.inputs.map(inp => {
        const area = el("textarea", { id: "in-" + inp.name, name: inp.name, rows: inp.name === "context" ? 4 : 3, required: inp.required, placeholder: inp.default || "", "aria-describedby": "err-input_" + inp.name });
        const file = el("input", { type: "file", "aria-label": `read ${inp.name} from a file`, onchange: async e => { const f = e.target.files[0]; if (f) area.value = await f.text(); } });
        return el("div", { class: "field" },
          el("label", { class: "flabel", for: "in-" + inp.name }, inp.name, inp.required ? el("span", { class: "req", title: "required" }, " *") : null),
          inp.description ? el("div", { class: "note" }, inp.description, inp.max_chars ? ` (at most ${inp.max_chars.toLocaleString("en-US")} characters)` : "") : null,
          inp.domain ? el("div", { class: "note" }, domainNote(inp.domain)) : null,
          area, el("div", { class: "fileline" }, "or from a file: ", file), errBox("input:" + inp.name));
      });
      const vars = sp.vars.map(v => {
        let ctl;
        const d = v.domain || {};
        if (v.type === "bool") ctl = el("input", { type: "checkbox", id: "var-" + v.name, checked: v.default === "true" });
        else if (d.enum) {
          ctl = el("select", { id: "var-" + v.name }, d.enum.map(o => el("option", { value: String(o) }, String(o))));
          ctl.value = v.default;
        } else if (v.type === "int" || v.type === "number") ctl = el("input", { type: "number", id: "var-" + v.name, value: v.default, step: v.type === "int" ? "1" : "any", min: d.minimum, max: d.maximum });
        else ctl = el("input", { type: "text", id: "var-" + v.name, value: v.default });
        ctl.dataset.var = v.name;
        ctl.dataset.default = v.default;
        return el("div", { class: "field var" }, el("label", { class: "flabel", for: "var-" + v.name }, v.name, el("span", { class: "note" }, " " + v.type + (v.domain ? ", " + domainNote(v.domain) : ""))), ctl, errBox("var:" + v.name));
      });
      const models = sp.models.map(m => {
        const sel = el("select", { id: "model-" + m.name, "data-model": m.name },
          sp.models.map(o => el("option", { value: o.name }, `${o.name}: ${o.model}${o.endpoint ? ` (${o.endpoint}, ${o.kind})` : ""}`)),
          sp.offline ? el("option", { value: "offline" }, "offline: simulated replies, no key, never priced") : null);
        sel.value = m.name;
        return el("div", { class: "field" }, el("label", { class: "flabel", for: "model-" + m.name }, "in place of " + m.name), sel, errBox("model:" + m.name));
      });
      const allOffline = sp.offline ? el("button", { type: "button", id: "all-offline", onclick: () => { for (const s of formBox.querySelectorAll("select[data-model]")) s.value = "offline"; } }, "All offline") : null;
      // A sweep: over a dataset of the folder (or a generated one), a
      // matrix of values, repeats; as runner run --dataset/--matrix/--repeat.
      const dataset = el("input", { type: "text", id: "dataset", list: "dataset-files", placeholder: "none: one run", "aria-describedby": "err-dataset" });
      const datasetFiles = el("datalist", { id: "dataset-files" }, (data.datasets || []).map(d => el("option", { value: d })), el("option", { value: "gen:arithmetic?n=5&seed=1" }));
      const matrix = el("textarea", { id: "matrix", rows: 2, placeholder: "NAME=V1,V2 (one a line)", "aria-describedby": "err-matrix" });
      const repeat = el("input", { type: "number", id: "repeat", min: "1", step: "1", value: "1" });
      const parallel = el("input", { type: "number", id: "parallel", min: "1", step: "1", value: "4" });
      const budget = el("input", { type: "text", id: "budget", placeholder: "e.g. cost=1, calls=200" });
      const seed = el("input", { type: "number", id: "seed", step: "1", placeholder: "the spec's" });
      // Files for the run's context folder (<run>/context), which its
      // file tools read, as runner run --context DIR gives.
      const files = el("input", { type: "file", id: "context-files", multiple: true, "aria-describedby": "err-files" });
      const submit = el("button", { type: "submit", id: "start", class: "primary" }, "Start the run");
      const form = el("form", { id: "start-form", novalidate: true },
        general,
        sp.description ? el("p", { class: "note" }, sp.description) : null,
        el("h2", {}, "Inputs"), inputs.length ? inputs : el("p", { class: "note" }, "The spec takes no input."),
        el("div", { class: "field" }, el("label", { class: "flabel", for: "context-files" }, "context files"),
          el("div", { class: "note" }, "Files the run's tools (read_file, list_files) may read: a plain name each, at most 1 MB a file and 2 MB in all."),
          files, errBox("files")),
        vars.length ? [el("h2", {}, "Vars"), el("div", { class: "vars" }, vars)] : null,
        el("h2", {}, "Models"), el("p", { class: "note" }, "Models are chosen by name; their keys stay in the environment of runner view."),
        models, allOffline, errBox("models"),
        el("h2", {}, "Limits"),
        el("div", { class: "vars" },
          el("div", { class: "field" }, el("label", { class: "flabel", for: "budget" }, "budget"), budget, errBox("budget")),
          el("div", { class: "field" }, el("label", { class: "flabel", for: "seed" }, "seed"), seed, errBox("seed"))),
        el("h2", {}, "A sweep (optional)"),
        el("p", { class: "note" }, "Give a dataset (a line's fields are inputs, its expected value is scored), a matrix or repeats to run many times, as runner run --dataset, --matrix and --repeat do; the sweep's page shows each run as it ends."),
        el("div", { class: "vars" },
          el("div", { class: "field" }, el("label", { class: "flabel", for: "dataset" }, "dataset"), dataset, datasetFiles, errBox("dataset")),
          el("div", { class: "field" }, el("label", { class: "flabel", for: "matrix" }, "matrix"), matrix, errBox("matrix")),
          el("div", { class: "field" }, el("label", { class: "flabel", for: "repeat" }, "repeat"), repeat, errBox("repeat")),
          el("div", { class: "field" }, el("label", { class: "flabel", for: "parallel" }, "runs at once"), parallel, errBox("parallel"))),
        el("div", { class: "actions" }, submit));
      form.onsubmit = async e => {
        e.preventDefault();
        for (const b of form.querySelectorAll(".field-error")) b.textContent = "";
        for (const b of form.querySelectorAll(".invalid")) b.classList.remove("invalid");
        general.textContent = "";
        const req = { spec: sp.path, inputs: {}, vars: {}, models: {}, budget: budget.value, seed: seed.value,
          dataset: dataset.value.trim(), matrix: matrix.value, repeat: +repeat.value || 0, parallel: +parallel.value || 0 };
        for (const inp of sp.inputs) req.inputs[inp.name] = document.getElementById("in-" + inp.name).value;
        for (const c of form.querySelectorAll("[data-var]")) {
          const v = c.type === "checkbox" ? String(c.checked) : c.value;
          if (v !== c.dataset.default) req.vars[c.dataset.var] = v;
        }
        for (const s of form.querySelectorAll("select[data-model]")) req.models[s.dataset.model] = s.value;
        submit.disabled = true;
        try {
          if (files.files.length) req.files = await Promise.all([...files.files].map(async f => ({ name: f.name, data: await base64(f) })));
          const res = await post("/api/act/start", req);
          if (res.ok) { go((res.data.kind === "sweep" ? "/sweep/" : "/run/") + res.data.id); return; }
          const problems = res.data && res.data.problems ? res.data.problems : [{ field: "", message: refusal(res) }];
          let first = null;
          for (const p of problems) {
            const box = p.field && form.querySelector(`.field-error[data-field="${CSS.escape(p.field)}"]`);
            if (box) {
              box.textContent = p.message;
              const ctl = box.parentElement.querySelector("textarea, input, select");
              if (ctl) { ctl.classList.add("invalid"); first = first || ctl; }
            } else {
              general.append(el("pre", {}, p.message));
            }
          }
          // The first field in error takes the focus (a keyboard user
          // lands on it); problems of the whole form are shown on top.
          if (first) { first.scrollIntoView({ block: "center" }); first.focus(); } else general.scrollIntoView({ block: "center" });
        } finally {
          submit.disabled = false;
        }
      };
      formBox.replaceChildren(form);
    }
  }

  // base64 is a file's bytes as JSON carries them.
  async function base64(file) {
    const bytes = new Uint8Array(await file.arrayBuffer());
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(bin);
  }

  // The study files of the folder, each started (or gone on with) as
  // runner study FILE does.
  function studiesCard(K, data) {
    const { el, go } = K;
    if (!(data.studies || []).length) return null;
    const note = el("div", { class: "note", id: "study-note", role: "status" });
    return el("div", { class: "card", id: "studies" }, el("h2", {}, "Or start a study"),
      el("p", { class: "note" }, "A study runs each of its specs over its dataset (a sweep each) and writes one table, as runner study FILE does; started again, it goes on where it stopped."),
      el("ul", { class: "studies" }, data.studies.map(st => el("li", {},
        el("button", { type: "button", "data-study": st.path, "aria-label": `start the study ${st.name} (${st.path})`, onclick: async e => {
          e.target.disabled = true;
          const res = await post("/api/act/study", { path: st.path });
          e.target.disabled = false;
          if (res.ok) { go("/study/" + res.data.id); return; }
          note.textContent = res.data && res.data.problems ? res.data.problems.map(p => p.message).join("\n") : refusal(res);
        } }, "Start"), " ", el("b", {}, st.name), " ", el("span", { class: "mono note" }, st.path), st.description ? el("div", { class: "note" }, st.description) : null))),
      note);
  }

  // ---- a sweep's or study's actions: cancel, go on ----
  // batchActions is the card of a sweep's or study's page that cancels it
  // (when this view makes it) or goes on with it (when it stopped before
  // its end), or null.
  function batchActions(K, id, data, unfinished) {
    const { el, route } = K;
    if (!data.acting) return null;
    const note = el("div", { class: "note", id: "act-note", role: "status" });
    const act = (path, label, btnId, after) => el("button", { id: btnId, onclick: async e => {
      e.target.disabled = true;
      const res = await post(path, { id });
      if (!res.ok) { note.textContent = refusal(res); e.target.disabled = false; return; }
      note.textContent = after;
      setTimeout(route, 300);
    } }, label);
    if (data.going) return el("div", { class: "card acts" }, el("p", {}, "This view is making it. "), act("/api/act/cancel", "Cancel", "cancel", "Stopping…"), note);
    if (unfinished && !data.running) return el("div", { class: "card acts" }, el("p", {}, "It stopped before its end. "), act("/api/act/resume", "Go on with it", "resume", "Going on…"), note);
    return null;
  }

  // ---- a run's actions: answer, cancel, resume ----
  // runActions fills box for the run id; update(status) redraws it when the
  // run's status changes.
  function runActions(K, box, id, info) {
    const { el, api, route } = K;
    let shown = null;
    function draw(info) {
      if (!info.acting) { box.replaceChildren(); return; }
      const status = info.status;
      const note = el("div", { class: "note", id: "act-note", role: "status" });
      const parts = [];
      if (info.going) {
        parts.push(el("p", {}, "This view is making the run. "),
          el("button", { id: "cancel", onclick: async e => {
            e.target.disabled = true;
            const res = await post("/api/act/cancel", { id });
            if (!res.ok) { note.textContent = refusal(res); e.target.disabled = false; return; }
            note.textContent = "Stopping…";
            await settle(s => s !== "running");
            route();
          } }, "Cancel the run"));
      } else if (info.open_questions && info.open_questions.length) {
        const open = info.open_questions.filter(q => !q.answered);
        // A turn of an agent a person plays (human: true) is an open
        // question too, answered with the agent's message; it is shown
        // with the prompt its model would have been sent.
        const turns = new Map((info.open_turns || []).map(t => [t.id, t]));
        const asks = open.filter(q => !turns.has(q.id));
        const field = q => {
          const t = turns.get(q.id);
          if (!t) {
            return el("div", { class: "field" },
              el("label", { class: "flabel", for: "answer-" + q.id }, el("b", {}, q.agent), " asks: ", q.question),
              el("textarea", { id: "answer-" + q.id, "data-question": q.id, rows: 2 }),
              el("div", { class: "field-error", "data-field": "answer:" + q.id }));
          }
          const who = ((info.agents || []).find(a => a.id === t.agent) || { name: t.agent }).name;
          const where = [`node ${t.node}`, t.round ? `round ${t.round}` : null, t.goal ? `goal ${t.goal}` : null].filter(Boolean).join(", ");
          return el("div", { class: "field turn", "data-turn": t.id },
            el("details", { class: "turn-prompt", open: true },
              el("summary", {}, `What ${who}'s model would have been sent (${where}): the history and whispers ${who} sees`),
              t.messages.map(m => el("div", { class: "turn-msg", "data-role": m.role },
                el("div", { class: "note" }, m.role + (m.name ? " · " + m.name : "")),
                el("pre", { class: "turn-text" }, m.content)))),
            el("label", { class: "flabel", for: "answer-" + q.id }, "Your message as ", el("b", {}, who)),
            el("textarea", { id: "answer-" + q.id, "data-question": q.id, rows: 5 }),
            el("div", { class: "field-error", "data-field": "answer:" + q.id }));
        };
        const live = open.some(q => q.terminal);
        const form = el("form", { id: "answer-form" },
          el("h2", {}, turns.size && !asks.length ? "The run waits for your turn" : "The run waits for your answers"),
          el("p", { class: "note" }, (asks.length ? "An empty answer means “not applicable”. " : "") + (live
            ? "A terminal asks this as the run goes: answer here or there; the first answer wins, and the other side is told."
            : "The run goes on as soon as you answer (from here or from a terminal: whichever answers first).")),
          open.map(field),
          el("div", { class: "actions" }, el("button", { type: "submit", id: "answer", class: "primary" }, turns.size && !asks.length ? "Send and go on" : "Answer and go on")));
        form.onsubmit = async e => {
          e.preventDefault();
          const answers = {};
          for (const t of form.querySelectorAll("textarea[data-question]")) answers[t.dataset.question] = t.value;
          form.querySelector("#answer").disabled = true;
          const res = await post("/api/act/answer", { id, answers });
          form.querySelector("#answer").disabled = false;
          if (res.ok && live) {
            // The terminal's run takes the answer within a moment.
            note.textContent = "Answered; the run goes on.";
            const fresh = await settle((s, f) => !(f.open_questions || []).some(q => q.id in answers));
            asked = askedOf(fresh);
            draw(fresh);
            return;
          }
          if (res.ok) { route(); return; }
          if (res.data && res.data.problems) {
            for (const p of res.data.problems) {
              const b = form.querySelector(`.field-error[data-field="${CSS.escape(p.field)}"]`);
              if (b) b.textContent = p.message; else note.textContent = p.message;
            }
            return;
          }
          note.textContent = refusal(res);
          if (res.status === 409) note.append(" ", el("a", { href: "#", onclick: ev => { ev.preventDefault(); route(); } }, "Show the run as it is now"));
        };
        parts.push(form);
      } else if (["failed", "incomplete", "budget_exceeded", "waiting"].includes(status)) {
        parts.push(el("p", {}, status === "incomplete" ? "The run stopped before its end. " : status === "budget_exceeded" ? "The run stopped at its budget. " : "The run did not finish. "),
          el("button", { id: "resume", onclick: async e => {
            e.target.disabled = true;
            const res = await post("/api/act/resume", { id });
            e.target.disabled = false;
            if (res.ok) { route(); return; }
            note.textContent = refusal(res);
          } }, "Resume the run"));
      }
      if (parts.length) box.replaceChildren(el("div", { class: "card acts" }, ...parts, note));
      else box.replaceChildren();
    }
    // settle asks for the run until its status satisfies ok (a few seconds
    // at most): a run's files change just after its events.
    async function settle(ok) {
      for (let i = 0; i < 50; i++) {
        const fresh = await api("/api/run?id=" + encodeURIComponent(id));
        if (ok(fresh.status, fresh)) return fresh;
        await new Promise(r => setTimeout(r, 150));
      }
      return api("/api/run?id=" + encodeURIComponent(id));
    }
    // A run going on elsewhere (a terminal) may ask a question there that
    // the page can answer too: look for one while the run runs.
    const askedOf = i => (i.open_questions || []).filter(q => q.terminal).map(q => q.id).join(",");
    let asked = askedOf(info);
    const watch = setInterval(async () => {
      if (!box.isConnected) { clearInterval(watch); return; }
      if (!info.acting || info.going || shown !== "running") return;
      const fresh = await api("/api/run?id=" + encodeURIComponent(id));
      if (fresh.status === "running" && askedOf(fresh) !== asked) { asked = askedOf(fresh); draw(fresh); }
    }, 1000);
    draw(info);
    shown = info.status;
    return {
      async update(status) {
        if (!info.acting || status === shown || status === "running") return;
        shown = status;
        // The run ended here: ask for its questions and whether this
        // view still makes it, once its files say so.
        draw(await settle((s, f) => !f.going && s !== "running" && (s !== "waiting" || (f.open_questions || []).length > 0)));
      },
    };
  }

  window.Act = { startPage, runActions, batchActions };
})();
