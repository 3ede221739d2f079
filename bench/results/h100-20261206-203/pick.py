# bench/results/run-203/pick.py (see command.sh): per arm, the median over passes of decode, batch
# 8/32/64 tokens/s, verify 6/16 ms and the linears' summed sites at batch 32 / 64; prints the table
# and, last, "winner ARM": the arm of the most batch-64 tokens/s among the candidates (argv[2],
# comma-separated).
import json, statistics, sys, glob, os, re
d = sys.argv[1]
arms = {}
for f in sorted(glob.glob(os.path.join(d, '*.json'))):
    m = re.match(r'(.+)(\d)\.json$', os.path.basename(f))  # passes 1-9
    try: j = json.load(open(f))
    except Exception: continue
    arms.setdefault(m.group(1), []).append(j)
def med(xs): return statistics.median(xs) if xs else float('nan')
rows = {}
for a, js in arms.items():
    r = {}
    r['decode'] = med([j['decode'][0]['ms_per_layer_token'] for j in js])
    for B in (8, 32, 64):
        r[f'b{B}'] = med([b['tokens_per_s'] for j in js for b in j['batch'] if b['batch'] == B])
    for V in (6, 16):
        r[f'v{V}'] = med([v['ms'] for j in js for v in j['verify'] if v['block'] == V])
    r['lin64'] = med([sum(s['ms'] for s in b['timeline']['sites'] if 'linear_exact' in s['site'])
                      for j in js for b in j['batch'] if b['batch'] == 64 and 'timeline' in b])
    r['lin32'] = med([sum(s['ms'] for s in b['timeline']['sites'] if 'linear_exact' in s['site'])
                      for j in js for b in j['batch'] if b['batch'] == 32 and 'timeline' in b])
    rows[a] = r
print(f"{'arm':6s} {'decode':>8s} {'b8':>7s} {'b32':>7s} {'b64':>7s} {'v6 ms':>7s} {'v16 ms':>7s} {'lin32':>7s} {'lin64':>7s}  (medians over passes)")
for a, r in rows.items():
    print(f"{a:6s} {r['decode']:8.4f} {r['b8']:7.0f} {r['b32']:7.0f} {r['b64']:7.0f} {r['v6']:7.3f} {r['v16']:7.3f} {r['lin32']:7.3f} {r['lin64']:7.3f}")
names = sys.argv[2].split(',')
cands = {a: r['b64'] for a, r in rows.items() if a in names and r['b64'] == r['b64']}
print('winner', max(cands, key=cands.get) if cands else names[0])
