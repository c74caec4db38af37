// The preview page's script. Every text of the library (names,
// descriptions, values, the rendered prompt, problems) is put in the
// document with textContent: shown as text, never read as markup.
'use strict';
(() => {
  // serve --ui with --auth-token: the page was opened with ?token=, and
  // every request of its own carries it the same way.
  const token = new URLSearchParams(location.search).get('token');
  // The label shown lives in the page's URL (?label=), so that a link
  // shows the same; '' is the one a request naming none is served.
  const labelOfURL = () => new URLSearchParams(location.search).get('label') || '';
  let label = labelOfURL();
  const api = (path, params) => {
    const q = new URLSearchParams(params || {});
    if (label) q.set('label', label);
    if (token) q.set('token', token);
    const s = q.toString();
    return 'api/' + path + (s ? '?' + s : '');
  };
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  };
  const status = (text) => { $('status').textContent = text; };

  let selected = null; // the template shown
  const typedBy = {}; // what the author typed, by template and variable
  let typed = {}; // typedBy's entry for the template shown
  let shownKey = null; // the template detail the form was built from, as JSON
  let renderSeq = 0;
  let timer = null;

  // getJSON throws an error answer's problem, with the labels there are
  // when a label could not be shown.
  async function getJSON(url, init) {
    const r = await fetch(url, init);
    const body = await r.json();
    if (!r.ok) throw Object.assign({}, body.error || { message: r.statusText }, { labels: body.labels });
    return body;
  }

  // showProblem writes problem p into box: its code and what failed, why,
  // and how to fix it.
  function showProblem(box, p) {
    box.replaceChildren(el('div', (p.code ? p.code + ': ' : '') + p.message));
    if (p.why) box.append(el('div', p.why, 'how'));
    if (p.how) box.append(el('div', 'How to fix: ' + p.how, 'how'));
    box.hidden = false;
  }

  // showLabels offers the labels, current chosen; nothing without labels.
  // A label that is not one of them (a link's) is shown as unknown.
  function showLabels(names, current) {
    const box = $('label-box');
    if (!names || names.length === 0) {
      box.hidden = true;
      return;
    }
    const sel = $('label');
    sel.replaceChildren(...names.map((n) => {
      const o = el('option', n);
      o.value = n;
      return o;
    }));
    if (current && !names.includes(current)) {
      const o = el('option', current + ' (unknown)');
      o.value = current;
      o.disabled = true;
      sel.append(o);
    }
    sel.value = current;
    box.hidden = false;
  }

  // choose shows label l, and puts it in the page's URL.
  function choose(l) {
    label = l;
    const q = new URLSearchParams(location.search);
    q.set('label', l);
    history.pushState(null, '', '?' + q.toString() + location.hash);
    refresh();
  }

  function showSource(src) {
    const parts = [src.kind, src.location, src.ref].filter(Boolean);
    $('source').textContent = parts.join(' · ');
  }

  function pick(name, desc, badges, current, onClick) {
    const b = el('button', null, 'pick');
    b.type = 'button';
    b.dataset.name = name;
    b.setAttribute('aria-current', current ? 'true' : 'false');
    const n = el('span', name, 'name');
    for (const [text, cls] of badges) n.append(el('span', text, 'badge ' + cls));
    b.append(n);
    if (desc) b.append(el('span', desc, 'desc'));
    b.addEventListener('click', onClick);
    return b;
  }

  function showTemplates(list) {
    const box = $('templates');
    box.replaceChildren();
    if (list.length === 0) box.append(el('p', 'No valid template.', 'meta'));
    let ns = null;
    let ul = null;
    for (const t of list) {
      if (!ul || t.namespace !== ns) {
        ns = t.namespace;
        if (ns) box.append(el('h3', ns));
        ul = el('ul', null, 'plain');
        box.append(ul);
      }
      const badges = [];
      if (t.version) badges.push(['v' + t.version, '']);
      if (t.tests) badges.push([t.tests + (t.tests === 1 ? ' test' : ' tests'), '']);
      if (t.warnings) badges.push([t.warnings + (t.warnings === 1 ? ' warning' : ' warnings'), 'warn']);
      const li = el('li');
      li.append(pick(t.name, t.description, badges, t.name === selected, () => select(t.name)));
      ul.append(li);
    }
  }

  function showFlows(list) {
    const ul = $('flows');
    ul.replaceChildren();
    if (list.length === 0) ul.append(el('li', 'No flow.', 'meta'));
    for (const f of list) {
      const li = el('li');
      li.append(el('strong', 'flow:' + f.name));
      if (f.description) li.append(el('div', f.description, 'meta'));
      li.append(el('div', f.steps.join(' → '), 'meta'));
      ul.append(li);
    }
  }

  function showInvalid(list) {
    const ul = $('invalid');
    ul.replaceChildren();
    if (list.length === 0) ul.append(el('li', 'None: every file is valid.', 'meta'));
    for (const inv of list) {
      const li = el('li');
      li.dataset.path = inv.path;
      li.append(el('div', inv.path, 'path'));
      li.append(el('div', inv.code + (inv.kept ? ' (its last valid version is still served)' : ''), 'meta'));
      for (const p of inv.problems) {
        const d = el('div', null, 'problem');
        d.append(el('span', p.pointer || '(the whole file)', 'pointer'), document.createTextNode(': ' + p.message));
        li.append(d);
      }
      ul.append(li);
    }
  }

  // field is the form's input for variable v: a choice for an enum, a
  // checkbox for a boolean, one item per line for a list, a number input
  // for a number, text otherwise.
  function field(v, i) {
    const wrap = el('div', null, 'field');
    const id = 'var-' + i;
    const label = el('label', v.name + (v.required ? ' *' : ''));
    label.htmlFor = id;
    wrap.append(label);
    if (v.description) wrap.append(el('small', v.description));
    const value = Object.prototype.hasOwnProperty.call(typed, v.name) ? typed[v.name] : v.value;
    let input;
    if (v.type === 'boolean') {
      input = el('input');
      input.type = 'checkbox';
      input.checked = String(value).trim().toLowerCase() === 'true';
    } else if (v.enum && v.enum.length && v.type !== 'array') {
      input = el('select');
      if (!v.required) {
        const none = el('option', '(none)');
        none.value = '';
        input.append(none);
      }
      for (const choice of v.enum) {
        const o = el('option', choice);
        o.value = choice;
        input.append(o);
      }
      input.value = value;
    } else if (v.type === 'array') {
      input = el('textarea');
      input.rows = 3;
      input.placeholder = 'one item per line';
      input.value = listLines(value);
    } else if (v.type === 'number' || v.type === 'integer') {
      input = el('input');
      input.type = 'number';
      input.step = v.type === 'integer' ? '1' : 'any';
      input.value = value;
    } else {
      input = el('textarea');
      input.rows = 2;
      input.value = value;
    }
    input.id = id;
    input.name = v.name;
    input.dataset.type = v.type || 'string';
    const onInput = () => { typed[v.name] = valueOf(input); schedule(); };
    input.addEventListener('input', onInput);
    input.addEventListener('change', onInput);
    wrap.append(input);
    if (v.examples && v.examples.length && v.type !== 'boolean') wrap.append(el('small', 'e.g. ' + v.examples.join(', ')));
    return wrap;
  }

  // listLines writes a list value (a JSON array, or lines already) one
  // item per line.
  function listLines(value) {
    try {
      const a = JSON.parse(value);
      if (Array.isArray(a)) return a.map(String).join('\n');
    } catch (e) { /* lines already */ }
    return value || '';
  }

  function valueOf(input) {
    return input.type === 'checkbox' ? (input.checked ? 'true' : 'false') : input.value;
  }

  function argumentsOf() {
    const args = {};
    for (const input of $('form').elements) {
      const v = valueOf(input);
      if (v !== '') args[input.name] = v;
    }
    return args;
  }

  // schedule renders once the author pauses typing.
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(renderNow, 150);
  }

  async function renderNow() {
    if (!selected) return;
    const seq = ++renderSeq;
    let out;
    try {
      out = await getJSON(api('render'), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: selected, arguments: argumentsOf() }),
      });
    } catch (e) {
      out = { text: '', error: e, unknown: [] };
    }
    if (seq !== renderSeq) return; // a later render is on its way
    const err = $('render-error');
    if (out.error) {
      showProblem(err, out.error);
    } else {
      err.hidden = true;
    }
    $('rendered').textContent = out.text;
    $('rendered').dataset.seq = String(seq);
  }

  async function showTemplate() {
    if (!selected) {
      $('template').hidden = true;
      $('empty').hidden = false;
      return;
    }
    const l = label;
    const name = selected;
    let d;
    try {
      d = await getJSON(api('template', { name }));
    } catch (e) {
      status(e.message);
      return;
    }
    // Another label or template was picked meanwhile: its own load shows
    // it, whichever answer comes first.
    if (l !== label || name !== selected) return;
    $('empty').hidden = true;
    $('template').hidden = false;
    // The same template as shown (the library changed elsewhere, or the
    // label did but not this template) keeps its form as it is: the
    // field the author is typing in keeps its focus.
    const key = JSON.stringify(d);
    if (key !== shownKey) {
      shownKey = key;
      showDetail(d);
    }
    await renderNow();
  }

  // showDetail shows template d: its description, form and tests.
  function showDetail(d) {
    $('t-name').textContent = d.name;
    $('t-description').textContent = d.description;
    $('t-path').textContent = d.path + (d.version ? ' · version ' + d.version : '') + (d.conversation ? ' · conversation' : '');
    const ws = $('t-warnings');
    ws.replaceChildren(...d.warnings.map((w) => el('li', w)));
    const form = $('form');
    form.replaceChildren(...d.variables.map(field));
    if (d.variables.length === 0) form.append(el('p', 'This template has no variables.', 'meta'));
    const tests = $('tests');
    tests.replaceChildren();
    if (d.tests.length === 0) tests.append(el('li', 'No tests: add some under "tests" in the file.', 'meta'));
    for (const t of d.tests) {
      const cls = t.status === 'pass' ? 'pass' : t.status === 'fail' ? 'fail' : 'notrun';
      tests.append(el('li', t.name + (t.reason ? ': ' + t.reason : ''), cls));
    }
  }

  function select(name) {
    selected = name;
    typed = typedBy[name] || (typedBy[name] = {});
    for (const b of document.querySelectorAll('#templates .pick')) {
      b.setAttribute('aria-current', b.dataset.name === name ? 'true' : 'false');
    }
    showTemplate();
  }

  async function load() {
    const l = label;
    let lib;
    try {
      lib = await getJSON(api('library'));
    } catch (e) {
      if (l !== label) return;
      if (e.code) showLibraryError(e);
      throw e;
    }
    // Another label was picked meanwhile (choose): the load it asked for
    // runs next, and shows that one.
    if (l !== label) return;
    $('page-error').hidden = true;
    showLabels(lib.labels, lib.label);
    follow(label);
    showSource(lib.source);
    if (selected && !lib.templates.some((t) => t.name === selected)) selected = null;
    if (!selected && lib.templates.length) selected = lib.templates[0].name;
    typed = selected ? typedBy[selected] || (typedBy[selected] = {}) : {};
    showTemplates(lib.templates);
    showFlows(lib.flows);
    showInvalid(lib.invalid);
    await showTemplate();
    status('updated ' + new Date().toLocaleTimeString());
  }

  // showLibraryError shows why the library cannot be shown (a label that
  // is not one of the server's), in place of its templates: never
  // another label's.
  function showLibraryError(e) {
    showLabels(e.labels, label);
    showProblem($('page-error'), e);
    for (const id of ['templates', 'flows', 'invalid']) $(id).replaceChildren();
    $('source').textContent = '';
    $('template').hidden = true;
    $('empty').hidden = true;
    if (e.code === 'UNKNOWN_LABEL') follow(null);
  }

  // follow keeps one event stream open, on the label l shown (null:
  // none), opened again when the label changes.
  let events = null;
  let following = null;
  function follow(l) {
    if (l === following && (events || l === null)) return;
    if (events) events.close();
    events = null;
    following = l;
    if (l === null) return;
    // "ready" comes when the stream (re)opens, after which changes
    // missed meanwhile are read too.
    events = new EventSource(api('events'));
    events.addEventListener('ready', refresh);
    events.addEventListener('change', refresh);
    events.addEventListener('error', () => status('disconnected: reconnecting…'));
  }

  // refresh loads the library again; calls while one runs make it run
  // once more after.
  let running = false;
  let again = false;
  async function refresh() {
    if (running) { again = true; return; }
    running = true;
    try {
      do {
        again = false;
        try {
          await load();
        } catch (e) {
          status('cannot read the library: ' + (e.message || e));
        }
      } while (again);
    } finally {
      running = false;
    }
  }

  // The library is read at once, and again each time the server says
  // the label shown changed (follow), or the author picks another.
  $('label').addEventListener('change', () => choose($('label').value));
  window.addEventListener('popstate', () => {
    label = labelOfURL();
    refresh();
  });
  refresh();
})();
