import { PGlite } from '@electric-sql/pglite';
let t = Date.now(); const p = new PGlite(); await p.query('select 1'); console.log('0.5 first', Date.now()-t);
t = Date.now(); const dump = await p.dumpDataDir('none'); console.log('dump', Date.now()-t, dump.size);
t = Date.now(); const q = new PGlite({ loadDataDir: dump }); await q.query('select 1'); console.log('from dump', Date.now()-t);
t = Date.now(); const r = new PGlite(); await r.query('select 1'); console.log('second fresh', Date.now()-t);
