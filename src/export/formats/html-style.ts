/** The HTML report's style sheet (inline: the report loads nothing). A click shows an image full size with `:target`, without script. */
export const REPORT_STYLE = `
:root{--pass:#1a7f37;--fail:#cf222e;--broken:#bc4c00;--skip:#6e7781;--run:#0969da;--line:#d0d7de;--dim:#57606a;color-scheme:light}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#f6f8fa}
header,main,footer{max-width:1200px;margin:0 auto;padding:16px 24px}
header{background:#fff;border-bottom:1px solid var(--line);max-width:none}
h1{font-size:22px;margin:4px 0 12px}h2{font-size:16px;margin:20px 0 8px}
.dim{color:var(--dim);font-weight:normal;font-size:12px}
.facts{display:flex;flex-wrap:wrap;gap:4px 24px;margin:0}
.facts div{display:flex;gap:6px}.facts dt{color:var(--dim)}.facts dd{margin:0;font-variant-numeric:tabular-nums}
.passed{--c:var(--pass)}.failed{--c:var(--fail)}.broken{--c:var(--broken)}.skipped{--c:var(--skip)}.running,.queued,.completed,.aborted{--c:var(--run)}
.badge,.pill{display:inline-block;border-radius:12px;padding:1px 10px;color:#fff;font-size:13px;vertical-align:middle;background:var(--c,var(--skip))}
.pill{font-size:12px;padding:0 8px}
section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:8px 16px 12px;margin:12px 0}
.timeline{width:100%;display:block;background:#f6f8fa;border-radius:4px}
.bar{fill:var(--c)}
ol.steps{list-style:none;margin:0;padding:0}
ol.steps ol.steps{padding-left:22px;border-left:2px solid var(--line);margin-left:8px}
.step summary{cursor:pointer;padding:3px 0}
.mark{display:inline-block;width:18px;text-align:center;color:var(--c);font-weight:bold}
.num{color:var(--dim)}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:6px 8px;background:#f6f8fa;border-radius:4px;font:12px/1.4 ui-monospace,monospace}
pre.error{background:#ffebe9;color:#82071e}
.cell{margin:4px 0 4px 24px}.cell-name{font-size:12px;color:var(--dim);text-transform:uppercase;letter-spacing:.03em}
.md{padding:0 8px}
.gallery{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0 8px 24px}
.diff{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:8px;width:100%;padding:6px;border:1px dashed var(--line);border-radius:6px}
.shot{margin:0;max-width:260px}.diff .shot{max-width:none}
.shot img{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px;background:#fff;display:block}
figcaption{font-size:12px;color:var(--dim);margin-top:2px;overflow-wrap:anywhere}
.close{display:none}
.shot:target{position:fixed;inset:0;z-index:10;max-width:none;margin:0;background:rgba(0,0,0,.88);display:flex;flex-direction:column;align-items:center;justify-content:center;padding:24px}
.shot:target img{max-width:95vw;max-height:88vh;width:auto;height:auto;border:0}
.shot:target figcaption{color:#fff}
.shot:target .close{display:block;position:absolute;top:8px;right:20px;color:#fff;font-size:32px;text-decoration:none}
footer{color:var(--dim);font-size:12px}
table.tests{border-collapse:collapse;width:100%}table.tests th,table.tests td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line)}
ul.files{list-style:none;margin:4px 0 4px 24px;padding:0}
details.attempt{margin:8px 0;padding:4px 8px;border:1px dashed var(--line);border-radius:6px}
section.test section{border:0;padding:0 0 0 8px;margin:6px 0}
[hidden]{display:none!important}
.filter{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin:4px 0 10px}
.filter label{display:flex;gap:6px;align-items:center;color:var(--dim)}
.filter select,.filter input{font:inherit;padding:2px 6px;border:1px solid var(--line);border-radius:4px}
.filter output{color:var(--dim);font-size:12px}
details.test-body>summary{cursor:pointer;list-style-position:outside}
details.test-body>summary h2{display:inline;margin:0}
details.test-body[open]>summary{margin-bottom:8px}
section.test{padding:10px 16px}
details.file-text>summary{cursor:pointer;color:var(--dim);font-size:12px}
.error-below{margin:2px 0 4px 24px}
`;
