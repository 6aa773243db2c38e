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
@media (max-width:600px){body{padding:6px;font-size:13px}.step .instr{flex-basis:100%}.hide-narrow{display:none}.badge{min-width:0}}
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
  window.addEventListener('hashchange',go);
  go();
})();
"#;
