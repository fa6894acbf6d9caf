// Kiln's course site: math (KaTeX), code highlighting (highlight.js), the search, the menu on small
// screens, and the "On this page" marker. No framework; every file it loads is in the site.
(function () {
  'use strict';

  // Math: md4c writes $...$ and $$...$$ as <x-equation> elements holding the TeX.
  function renderMath() {
    var equations = document.querySelectorAll('x-equation');
    if (!equations.length) return;
    if (!window.katex) {
      console.error('KaTeX did not load: the math on this page stays as TeX');
      return;
    }
    equations.forEach(function (el) {
      var tex = el.textContent;
      try {
        window.katex.render(tex, el, {
          displayMode: el.getAttribute('type') === 'display',
          throwOnError: true,
          strict: 'ignore',
          output: 'htmlAndMathml'
        });
        el.classList.add('math-done');
      } catch (e) {
        el.classList.add('math-error');
        console.error('math: ' + e.message + ' in: ' + tex);
      }
    });
  }

  function highlightCode() {
    if (!window.hljs) return;
    document.querySelectorAll('pre code[class*="language-"]').forEach(function (block) {
      window.hljs.highlightBlock(block);
    });
  }

  // Search: the index (assets/search-index.js) is loaded the first time it is needed.
  var index = null;
  var loading = null;
  function loadIndex() {
    if (index) return Promise.resolve(index);
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement('script');
        script.src = 'assets/search-index.js';
        script.onload = function () {
          index = window.KILN_SEARCH || [];
          resolve(index);
        };
        script.onerror = function () {
          loading = null;
          reject(new Error('the search index did not load'));
        };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  function terms(query) {
    return query.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter(function (t) { return t.length > 1; });
  }

  function count(haystack, needle) {
    var n = 0;
    for (var at = haystack.indexOf(needle); at !== -1 && n < 20; at = haystack.indexOf(needle, at + needle.length)) n++;
    return n;
  }

  function search(query) {
    var words = terms(query);
    if (!words.length) return [];
    var results = [];
    index.forEach(function (entry) {
      var section = entry.s.toLowerCase();
      var page = entry.p.toLowerCase();
      var text = entry.x.toLowerCase();
      var score = 0;
      for (var i = 0; i < words.length; i++) {
        var w = words[i];
        var inText = count(text, w);
        var s = (section.indexOf(w) !== -1 ? 12 : 0) + (page.indexOf(w) !== -1 ? 4 : 0) + Math.min(inText, 8);
        if (!s) return;  // every word must appear
        score += s;
      }
      results.push({entry: entry, score: score});
    });
    results.sort(function (a, b) { return b.score - a.score; });
    return results.slice(0, 12).map(function (r) { return r.entry; });
  }

  function escapeHtml(s) {
    return s.replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  function snippet(text, words) {
    var lower = text.toLowerCase();
    var at = -1;
    for (var i = 0; i < words.length && at === -1; i++) at = lower.indexOf(words[i]);
    var start = Math.max(0, at - 60);
    var piece = (start > 0 ? '…' : '') + text.slice(start, start + 180) + (start + 180 < text.length ? '…' : '');
    var html = escapeHtml(piece);
    words.forEach(function (w) {
      var re = new RegExp('(' + w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + ')', 'ig');
      html = html.replace(re, '<mark>$1</mark>');
    });
    return html;
  }

  function setUpSearch() {
    var input = document.getElementById('search');
    var box = document.getElementById('search-results');
    if (!input || !box) return;
    var selected = -1;

    function show(query) {
      if (!query.trim()) {
        box.hidden = true;
        box.innerHTML = '';
        return;
      }
      loadIndex().then(function () {
        var words = terms(query);
        var found = search(query);
        selected = -1;
        if (!found.length) {
          box.innerHTML = '<p class="search-empty">Nothing found for “' + escapeHtml(query) + '”.</p>';
        } else {
          box.innerHTML = found.map(function (e) {
            var title = e.s === e.p ? escapeHtml(e.p) : escapeHtml(e.s) + ' <span class="r-page">' + escapeHtml(e.p) + '</span>';
            return '<a class="search-result" href="' + escapeHtml(e.u) + '"><span class="r-title">' + title +
              '</span><span class="r-snippet">' + snippet(e.x, words) + '</span></a>';
          }).join('');
        }
        box.hidden = false;
      }, function (err) {
        console.error(err.message);
      });
    }

    function move(delta) {
      var links = box.querySelectorAll('a');
      if (!links.length) return;
      selected = (selected + delta + links.length) % links.length;
      links.forEach(function (a, i) { a.classList.toggle('selected', i === selected); });
      links[selected].scrollIntoView({block: 'nearest'});
    }

    input.addEventListener('input', function () { show(input.value); });
    input.addEventListener('focus', function () { loadIndex().catch(function () {}); if (input.value) show(input.value); });
    input.addEventListener('keydown', function (e) {
      if (e.key === 'ArrowDown') { move(1); e.preventDefault(); }
      else if (e.key === 'ArrowUp') { move(-1); e.preventDefault(); }
      else if (e.key === 'Enter') {
        var target = box.querySelector('a.selected') || box.querySelector('a');
        if (target) window.location.href = target.getAttribute('href');
      } else if (e.key === 'Escape') { input.value = ''; show(''); input.blur(); }
    });
    document.addEventListener('keydown', function (e) {
      if (e.key === '/' && document.activeElement !== input && !/INPUT|TEXTAREA/.test(document.activeElement.tagName)) {
        e.preventDefault();
        input.focus();
      }
    });
    document.addEventListener('click', function (e) {
      if (!e.target.closest('.search')) box.hidden = true;
    });
  }

  function setUpMenu() {
    var button = document.querySelector('.nav-toggle');
    if (!button) return;
    button.addEventListener('click', function () {
      var open = document.body.classList.toggle('nav-open');
      button.setAttribute('aria-expanded', open ? 'true' : 'false');
    });
  }

  // Marks the section being read in "On this page".
  function setUpToc() {
    var links = document.querySelectorAll('.toc a[href^="#"]');
    if (!links.length || !('IntersectionObserver' in window)) return;
    var byId = {};
    links.forEach(function (a) { byId[decodeURIComponent(a.getAttribute('href').slice(1))] = a; });
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        links.forEach(function (a) { a.classList.remove('current'); });
        var a = byId[entry.target.id];
        if (a) a.classList.add('current');
      });
    }, {rootMargin: '0px 0px -70% 0px'});
    Object.keys(byId).forEach(function (id) {
      var heading = document.getElementById(id);
      if (heading) observer.observe(heading);
    });
  }

  renderMath();
  highlightCode();
  setUpSearch();
  setUpMenu();
  setUpToc();

  // For the site's tests and for the curious: KilnSearch.query('im2col').then(console.log).
  window.KilnSearch = {
    query: function (q) {
      return loadIndex().then(function () { return search(q); });
    }
  };
})();
