//! The stylesheet and the script of `report.html`, inlined into every page: the look (badge
//! colours chosen for contrast) and the little the page does with JS on (the failures filter,
//! deep links to a test or step, the links' hrefs).

pub const CSS: &str = r#"
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--mute:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;padding:12px;color:#1f2328;max-width:1200px;margin:auto}
h1{font-size:20px;margin:4px 0 8px}h2{font-size:16px;margin:18px 0 8px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:8px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-word;margin:4px 0}
.chips span{display:inline-block;border-radius:12px;padding:2px 10px;margin:2px 4px 2px 0;background:var(--bg);border:1px solid var(--line)}
.chips .bad{color:#fff;background:var(--bad);border-color:var(--bad)}.chips .good{color:#fff;background:var(--ok);border-color:var(--ok)}
.meta{color:var(--mute);word-break:break-all}
.changes{border-left:4px solid var(--line);padding:4px 10px;margin:8px 0;background:var(--bg)}
.changes li.new{color:var(--bad);font-weight:600}.changes li.fixed{color:var(--ok);font-weight:600}
.tablewrap{overflow-x:auto}
.charts{display:flex;flex-wrap:wrap;gap:16px}.chart{margin:0;color:#0969da}.chart figcaption{color:#1f2328}.chart circle{fill:currentColor}.chart .hit{fill:transparent}.chart text{fill:#57606a;font-size:9px}
.rankings{display:flex;flex-wrap:wrap;gap:24px}.rankings h3{font-size:14px;margin:10px 0 4px}.rankings ol{margin:0;padding-left:20px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top}
.badge{display:inline-block;min-width:64px;text-align:center;border-radius:4px;padding:0 6px;font-weight:600;font-size:12px;color:#fff;background:var(--mute)}
.b-passed,.b-ok{background:var(--ok)}.b-warned,.b-warn{background:var(--warn)}.b-skipped,.b-not_run{background:#6e7781}
.b-failed,.b-error,.b-interrupted,.b-protocol_error,.b-timeout,.b-over_budget{background:var(--bad)}
.test{border:1px solid var(--line);border-radius:8px;margin:10px 0;overflow:hidden}
.test>summary{padding:8px 10px;cursor:pointer;background:var(--bg);display:flex;flex-wrap:wrap;gap:6px;align-items:baseline}
.test.bad>summary{background:#ffebe9}
.test .body{padding:6px 10px}
.step{border-top:1px solid var(--line);padding:6px 0}
.step .head{display:flex;flex-wrap:wrap;gap:8px;align-items:baseline}
.step .instr{flex:1 1 300px;white-space:pre-wrap;word-break:break-word}
.step.bad .msg{color:var(--bad);font-weight:600}
.msg{white-space:pre-wrap;word-break:break-word;margin:4px 0}
ul.logs{margin:4px 0}ul.logs::before{content:"BUGATTI_LOG";font-weight:600;margin-left:-40px}
.step.target{outline:3px solid #0969da;outline-offset:2px}
.test.target{outline:3px solid #0969da}
img.shot{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px;display:block;margin:4px 0}
.controls{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid var(--line);z-index:1}
a{color:#0969da}
.d-replayed{background:#1a7f37}.d-agent{background:#0969da}.d-drift{background:#bc4c00}.d-soft-drift{background:#d4a72c}.d-audited{background:#8250df}.d-not-run{background:#afb8c1}.d-setup{background:#8c959f}
.note{color:var(--mute)}
.legend{display:flex;flex-wrap:wrap;gap:4px 12px;margin:4px 0;font-size:12px;color:var(--mute)}.legend .sw{display:inline-block;width:14px;height:10px;border-radius:2px;margin-right:4px;vertical-align:middle}
.legend .tkl{display:inline-block;width:3px;height:12px;margin:0 4px 0 2px;vertical-align:middle;background:#1f2328}
.suite-tl{border:1px solid var(--line);border-radius:6px;padding:4px 6px}
.ghead{font-size:12px;color:var(--mute);border-top:1px dashed var(--line);margin-top:4px;padding-top:2px}
.lane{display:flex;align-items:center;gap:6px;min-height:22px}
.lane .lname{flex:0 0 220px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:12px}
.lane .lname .badge{min-width:0;font-size:10px}
.track{position:relative;flex:1 1 auto;height:18px;background:var(--bg);border-radius:3px}
.lane.own{margin:6px 0}.lane.own .track{height:22px}
.bar{position:absolute;top:2px;bottom:2px;min-width:3px;border-radius:2px;display:block;color:#fff;text-decoration:none}
.bar.failed{outline:2px solid var(--bad);outline-offset:1px}
.bar:focus{outline:3px solid #1f2328;z-index:3}
.bar .tip{display:none;position:absolute;top:100%;left:0;margin-top:4px;z-index:4;background:#1f2328;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;white-space:nowrap;max-width:80vw;overflow:hidden;text-overflow:ellipsis;pointer-events:none}
.bar:hover .tip,.bar:focus .tip{display:block}
.tk{position:absolute;top:0;bottom:0;width:2px;margin-left:-1px;background:rgba(255,255,255,.9)}
.tk-tool{top:55%}.tk-console{background:#1f2328}.tk-browser{background:#ffd33d}
.legend .tk-tool{background:#fff;outline:1px solid #1f2328}.legend .tk-console{background:#1f2328}.legend .tk-browser{background:#ffd33d;outline:1px solid #1f2328}
.film{display:flex;gap:6px;overflow-x:auto;padding:4px 0 6px}
.frame{flex:0 0 auto;display:flex;flex-direction:column;align-items:center;font-size:11px;border-top:4px solid;border-color:inherit;background:none!important;color:var(--mute);text-decoration:none}
.frame.d-replayed{border-top-color:#1a7f37}.frame.d-agent{border-top-color:#0969da}.frame.d-drift{border-top-color:#bc4c00}.frame.d-soft-drift{border-top-color:#d4a72c}.frame.d-audited{border-top-color:#8250df}
.frame img{width:120px;height:auto;max-height:90px;object-fit:cover;object-position:top;border:1px solid var(--line)}
.failshot{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start;margin:6px 0}.failshot figure{margin:0;flex:1 1 520px;max-width:760px}
img.shot.big{width:100%}
.a11y{flex:1 1 280px;min-width:0}.a11y pre{max-height:460px}.a11y-q{width:100%;margin:4px 0}
.a11y-tree mark,.mask{background:#fff8c5;border-bottom:1px dotted var(--warn)}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:8px}.sbs>div{min-width:0}
mark.first-diff{background:#ffebe9;outline:1px solid var(--bad)}
.reran{margin-top:4px}
.fgroups{padding-left:20px}.fgroup .count{font-weight:600;color:var(--bad)}.fgroup .fmsg{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}.fgroup .members{font-size:12px}
.prompt{margin:4px 0}.copy{font:inherit;padding:2px 10px;border:1px solid var(--line);border-radius:6px;background:#fff;cursor:pointer}
@media (max-width:600px){.lane .lname{flex-basis:96px}.sbs{grid-template-columns:1fr}body{padding:6px;font-size:13px}.step .instr{flex-basis:100%}.hide-narrow{display:none}.badge{min-width:0}}
"#;

pub const JS: &str = r#"
(function(){
  var box=document.getElementById('only-failures');
  function only(on){
    box.checked=on;
    document.body.setAttribute('data-filter',on?'failures':'all');
    var tests=document.querySelectorAll('.test');
    for(var i=0;i<tests.length;i++){tests[i].hidden=on&&!tests[i].classList.contains('bad');}
    var rows=document.querySelectorAll('tr.row');
    for(var j=0;j<rows.length;j++){rows[j].hidden=on&&!rows[j].classList.contains('bad');}
  }
  box.addEventListener('change',function(){only(box.checked);});
  function openUp(el){for(var e=el;e;e=e.parentElement){if(e.tagName==='DETAILS'){e.open=true;}}}
  function go(){
    var raw=location.hash.replace(/^#/,'');
    if(!raw){return;}
    var p=new URLSearchParams(raw);
    if(p.get('filter')==='failures'){only(true);}
    var el=null;
    if(p.has('first-failure')){
      el=document.querySelector('.step.bad')||document.querySelector('.test.bad');
    }else if(/^t[0-9]+(-s[0-9]+)?$/.test(raw)){
      el=document.getElementById(raw);
      if(!el){var parts=raw.split('-s'),t=document.getElementById(parts[0]);el=t&&t.querySelector('.step[data-step="'+parts[1]+'"]');}
    }else if(p.get('test')){
      var tests=document.querySelectorAll('.test');
      for(var i=0;i<tests.length;i++){if(tests[i].getAttribute('data-file')===p.get('test')){el=tests[i];break;}}
      if(el&&p.get('step')){
        var s=el.querySelector('.step[data-step="'+p.get('step').replace(/[^0-9]/g,'')+'"]');
        if(s){el=s;}
      }
    }
    var old=document.querySelectorAll('.target');
    for(var k=0;k<old.length;k++){old[k].classList.remove('target');}
    if(el){
      if(el.hidden||(el.closest('.test')&&el.closest('.test').hidden)){only(false);}
      if(!el.id){var t=el.closest('.test');el.id=(t?t.id:'t')+'-s'+el.getAttribute('data-step');}
      openUp(el);el.classList.add('target');
      document.body.setAttribute('data-landed',el.id);
      el.scrollIntoView();
    }else{document.body.setAttribute('data-landed','none');}
  }
  var links=document.querySelectorAll('.step a.sl');
  for(var n=0;n<links.length;n++){
    var st=links[n].closest('.step'),te=links[n].closest('.test');
    if(st&&te){links[n].href='#test='+encodeURIComponent(te.getAttribute('data-file'))+'&step='+st.getAttribute('data-step');}
  }
  // Copy as prompt: the step's prompt text, as plain text.
  var copies=document.querySelectorAll('button.copy');
  for(var c=0;c<copies.length;c++){
    copies[c].hidden=false;
    copies[c].addEventListener('click',function(ev){
      var b=ev.currentTarget,src=document.getElementById(b.getAttribute('data-for'));
      if(!src){return;}
      var text=src.textContent;
      function done(){b.textContent='Copied';b.setAttribute('data-copied','1');}
      function fallback(){
        var t=document.createElement('textarea');t.value=text;document.body.appendChild(t);t.select();
        try{document.execCommand('copy');done();}catch(e){}
        document.body.removeChild(t);
      }
      if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(text).then(done,fallback);}else{fallback();}
    });
  }
  // The accessibility snapshot's search: lines that match, marked; the rest dimmed away.
  var qs=document.querySelectorAll('.a11y-q');
  for(var q=0;q<qs.length;q++){
    var pre=qs[q].parentNode.querySelector('.a11y-tree');
    if(!pre){continue;}
    pre.setAttribute('data-text',pre.textContent);
    qs[q].hidden=false;
    qs[q].addEventListener('input',function(ev){
      var pre=ev.target.parentNode.querySelector('.a11y-tree'),all=pre.getAttribute('data-text'),needle=ev.target.value.toLowerCase();
      if(!needle){pre.textContent=all;return;}
      var lines=all.split('\n'),out=[];
      for(var i=0;i<lines.length;i++){if(lines[i].toLowerCase().indexOf(needle)>=0){out.push(lines[i]);}}
      pre.textContent='';
      for(var j=0;j<out.length;j++){var m=document.createElement('mark');m.textContent=out[j];pre.appendChild(m);pre.appendChild(document.createTextNode('\n'));}
      pre.setAttribute('data-matches',String(out.length));
    });
  }
  window.addEventListener('hashchange',go);
  go();
})();
"#;
