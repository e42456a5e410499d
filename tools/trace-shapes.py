#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""trace-shapes: seeded LLM-inference request traces in the Mooncake format.

Usage:
    tools/trace-shapes.py SHAPE [--requests N] [--seed S] > trace.jsonl
    tools/trace-shapes.py --list
    tools/trace-shapes.py --check

Writes one JSON object per request to stdout, in arrival order:

    {"timestamp": 0, "input_length": 6758, "output_length": 500,
     "hash_ids": [0, 1, 2, 3]}

timestamp is in ms from the first request (non-decreasing), input_length
and output_length are in tokens, hash_ids holds one id per whole 512-token
block of the prompt (len(hash_ids) == input_length // 512; the last partial
block has no id). Ids are chained: two requests share the id at position i
only if their prompts are equal up to and including block i. Ids count up
from 0 in order of first appearance.

The shapes (--list) differ in their reuse structure: agent, docqa, rag,
fewshot, chat. Equal arguments give equal output (random.Random(seed) is
the only source of randomness). Defaults: --requests 4000, --seed 1.
--check generates every shape twice (--requests, default 500 there) and
checks the format, the chaining, that prefixes come back and that equal
seeds give equal traces; make check runs it.
"""

import argparse
import bisect
import heapq
import io
import itertools
import json
import random
import sys

BLOCK = 512


class Zipf:
	"""Ranks 0..n-1 with P(r) proportional to 1 / (r + 1)^s."""

	def __init__(self, n, s):
		self.cw = list(itertools.accumulate(1.0 / (r + 1) ** s
						    for r in range(n)))

	def draw(self, rng):
		return bisect.bisect(self.cw, rng.random() * self.cw[-1])


class Prompt:
	"""A prompt as a list of block content tags and a token count.

	Shared content (tuples) is whole blocks and comes first; unique content
	(ints from one counter) is counted in tokens: the tokens past the last
	whole block are the partial block, which the next append completes.
	"""
	fresh = itertools.count()

	def __init__(self):
		self.tags = []
		self.tokens = 0

	def shared(self, tag, nblocks):
		assert self.tokens % BLOCK == 0
		self.tags.extend((tag, i) for i in range(nblocks))
		self.tokens += nblocks * BLOCK

	def unique(self, ntokens):
		self.tokens += ntokens
		while len(self.tags) < self.tokens // BLOCK:
			self.tags.append(next(Prompt.fresh))


def simulate(rng, nreq, newsess, arrival=0.0, slots=0, restart=0.0,
	     warm=0.0):
	"""Interleave sessions in time; yield (t_ms, prompt, output_length).

	A session is a generator yielding (prompt, output_length, gap_ms to its
	next request); it ends by returning. Open arrivals: a new session every
	Exp(arrival) ms. Closed: `slots` sessions at a time, a finished one
	replaced after Exp(restart) ms. Requests before `warm` ms are dropped so
	that the trace starts in steady state. The prompt is only valid until
	the consumer asks for the next request.
	"""
	heap = []
	seq = itertools.count()
	if arrival:
		heap.append((0.0, next(seq), None))
	for _ in range(slots):
		heapq.heappush(heap, (rng.uniform(0, 5000), next(seq),
				      newsess()))
	n = 0
	while n < nreq:
		t, _, g = heapq.heappop(heap)
		if g is None:
			t1 = t + rng.expovariate(1.0 / arrival)
			heapq.heappush(heap, (t1, next(seq), None))
			g = newsess()
		try:
			p, olen, gap = next(g)
		except StopIteration:
			if slots:
				t1 = t + rng.expovariate(1.0 / restart)
				heapq.heappush(heap, (t1, next(seq), newsess()))
			continue
		heapq.heappush(heap, (t + gap, next(seq), g))
		if t < warm:
			continue
		yield t, p, olen
		n += 1


def sizes(rng, n, lo, hi):
	return [rng.randint(lo, hi) for _ in range(n)]


# agent: tool-using agent loops re-reading a growing context.
#   64 agents at a time (closed loop); a finished agent is replaced after
#   Exp(2 s). A run: system prompt (one of 4, Zipf 1.0, 4-12 blocks) + tool
#   definitions (one of 8 sets, Zipf 1.0, 4-16 blocks) + a unique task
#   with attachments (200-3000 tokens), then 10-60 steps. Each step's prompt
#   is the previous one + the model's output (50-400 tokens) + a tool result
#   (500-1600 tokens), i.e. 1-4 new blocks. Steps are decode time
#   (25 ms/token) + tool time Exp(2 s) apart. Reuse: long private
#   prefixes re-read within seconds, small shared heads.
def shape_agent(rng, nreq):
	nsys, ntools = sizes(rng, 4, 4, 12), sizes(rng, 8, 4, 16)
	zsys, ztools = Zipf(4, 1.0), Zipf(8, 1.0)

	def run():
		p = Prompt()
		s, k = zsys.draw(rng), ztools.draw(rng)
		p.shared(('sys', s), nsys[s])
		p.shared(('tools', s, k), ntools[k])
		p.unique(rng.randint(200, 3000))
		for _ in range(rng.randint(10, 60)):
			olen = rng.randint(50, 400)
			yield p, olen, olen * 25 + rng.expovariate(1 / 2000)
			p.unique(olen + rng.randint(500, 1600))

	return simulate(rng, nreq, run, slots=64, restart=2000)


# docqa: question answering over a shared document corpus.
#   2000 documents of 8-64 blocks, Zipf 1.0 popularity; 4 sessions/s. A
#   request: system prompt (one of 3 with weights 6:3:1, 2-4 blocks) + a
#   document + a question (50-600 tokens, at most one whole block). 25% of
#   sessions ask 2-3 follow-ups, each the previous prompt + the answer
#   (50-400 tokens) + a new question, after Exp(20 s) think time.
#   Reuse: big shared document blocks with a long popularity tail.
def shape_docqa(rng, nreq):
	nsys, ndoc = sizes(rng, 3, 2, 4), sizes(rng, 2000, 8, 64)
	zdoc = Zipf(2000, 1.0)

	def session():
		p = Prompt()
		s = rng.choices(range(3), weights=(6, 3, 1))[0]
		d = zdoc.draw(rng)
		p.shared(('sys', s), nsys[s])
		p.shared(('doc', d), ndoc[d])
		p.unique(rng.randint(50, 600))
		turns = 1 + (rng.randint(2, 3) if rng.random() < 0.25 else 0)
		for _ in range(turns):
			olen = rng.randint(50, 400)
			yield p, olen, olen * 25 + rng.expovariate(1 / 20000)
			p.unique(olen + rng.randint(50, 600))

	return simulate(rng, nreq, session, arrival=250)


# rag: retrieval-augmented generation with hot chunks.
#   A system prompt (one of 3, weights 6:3:1, 2-6 blocks) + k = 4-8 chunks
#   from a pool of 20000 (1-2 blocks each, Zipf 1.2 popularity), ordered by
#   a score that favours popular chunks (rank times a 0.5-2x noise factor),
#   + a unique question (30-400 tokens); 10 requests/s. Chaining means
#   only the common prefix (system prompt, hot first chunks) is reused.
def shape_rag(rng, nreq):
	nsys, nchunk = sizes(rng, 3, 2, 6), sizes(rng, 20000, 1, 2)
	zchunk = Zipf(20000, 1.2)

	def request():
		p = Prompt()
		s = rng.choices(range(3), weights=(6, 3, 1))[0]
		p.shared(('sys', s), nsys[s])
		k = rng.randint(4, 8)
		picked = set()
		while len(picked) < k:
			picked.add(zchunk.draw(rng))
		scored = sorted((c * rng.uniform(0.5, 2.0), c) for c in picked)
		for _, c in scored:
			p.shared(('chunk', c), nchunk[c])
		p.unique(rng.randint(30, 400))
		yield p, rng.randint(100, 600), 0

	return simulate(rng, nreq, request, arrival=100)


# fewshot: few-shot prompting with drifting task popularity.
#   200 task templates of 6-30 blocks: an instruction (2-6 blocks) then
#   examples (4-24 blocks) in one of 4 versions (weights 8:4:2:1, e.g. A/B
#   prompt variants), so versions share the instruction. Templates are
#   Zipf 1.0 over a ranking that drifts: every 1000 requests the 20 hottest
#   swap ranks with 20 random colder ones. A request: the template + a
#   unique query (1-3 whole blocks + a partial one); 10 requests/s,
#   20-300 output tokens. Reuse: medium-size shared prefixes whose hot set
#   moves over time.
def shape_fewshot(rng, nreq):
	nhead, nex = sizes(rng, 200, 2, 6), sizes(rng, 200, 4, 24)
	ztmpl = Zipf(200, 1.0)
	rank = list(range(200))
	rng.shuffle(rank)
	count = itertools.count()

	def request():
		if next(count) % 1000 == 999:
			cold = rng.sample(range(20, 200), 20)
			for i, j in enumerate(cold):
				rank[i], rank[j] = rank[j], rank[i]
		p = Prompt()
		tm = rank[ztmpl.draw(rng)]
		v = rng.choices(range(4), weights=(8, 4, 2, 1))[0]
		p.shared(('head', tm), nhead[tm])
		p.shared(('examples', tm, v), nex[tm])
		p.unique(rng.randint(BLOCK, 4 * BLOCK - 1))
		yield p, rng.randint(20, 300), 0

	return simulate(rng, nreq, request, arrival=100)


# chat: long multi-turn chats with human think time.
#   Sessions of 5-40 turns, one of 5 system prompts (Zipf 1.0, 2-8 blocks);
#   each turn appends the answer and the next user message (1-6 blocks in
#   all; answers 50-800 tokens). Think time Exp(90 s); a new session every
#   4 s, so ~500 sessions are open and ~500 other requests arrive between
#   two turns of one session. The first 90 minutes are dropped so that the
#   trace starts in steady state (sessions already under way). Reuse: long
#   private prefixes re-read after a long reuse distance.
def shape_chat(rng, nreq):
	nsys = sizes(rng, 5, 2, 8)
	zsys = Zipf(5, 1.0)

	def session():
		p = Prompt()
		s = zsys.draw(rng)
		p.shared(('sys', s), nsys[s])
		p.unique(rng.randint(20, 1000))
		for _ in range(rng.randint(5, 40)):
			olen = rng.randint(50, 800)
			yield p, olen, olen * 25 + rng.expovariate(1 / 90000)
			p.unique(olen + rng.randint(20, 2200))

	return simulate(rng, nreq, session, arrival=4000, warm=90 * 60000)


SHAPES = {
	'agent': shape_agent,
	'docqa': shape_docqa,
	'rag': shape_rag,
	'fewshot': shape_fewshot,
	'chat': shape_chat,
}


def emit(reqs, out):
	chain = {}
	t0 = None
	for t, p, olen in reqs:
		if t0 is None:
			t0 = t
		ids = []
		parent = -1
		for tag in p.tags:
			key = (parent, tag)
			parent = chain.get(key)
			if parent is None:
				parent = chain[key] = len(chain)
			ids.append(parent)
		out.write(json.dumps({'timestamp': int(t - t0),
				      'input_length': p.tokens,
				      'output_length': olen,
				      'hash_ids': ids}) + '\n')


def check(shape, nreq):
	"""The trace of @shape, checked; a line saying why not, or None."""
	runs = []
	for _ in range(2):
		out = io.StringIO()
		emit(SHAPES[shape](random.Random(1), nreq), out)
		runs.append(out.getvalue())
	if runs[0] != runs[1]:
		return 'two runs with one seed differ'
	parent = {}
	last = reused = blocks = 0
	lines = runs[0].splitlines()
	for n, line in enumerate(lines, 1):
		r = json.loads(line)
		if list(r) != ['timestamp', 'input_length', 'output_length',
			       'hash_ids']:
			return 'line %d: fields %s' % (n, list(r))
		ids = r['hash_ids']
		if r['timestamp'] < last:
			return 'line %d: time goes back' % n
		last = r['timestamp']
		if len(ids) != r['input_length'] // BLOCK:
			return 'line %d: %d ids for %d tokens' % (
				n, len(ids), r['input_length'])
		up = -1
		for i in ids:
			if i not in parent:
				if i != len(parent):
					return 'line %d: id %d out of order' % (n, i)
				parent[i] = up
			elif parent[i] != up:
				return 'line %d: id %d has two parents' % (n, i)
			else:
				reused += 1
			up = i
		blocks += len(ids)
	if len(lines) != nreq or not blocks or reused * 4 < blocks:
		return '%d requests, %d blocks, %d reused' % (len(lines), blocks,
							      reused)
	print('trace-shapes: %s ok: %d requests, %d blocks, %d distinct' % (
		shape, nreq, blocks, len(parent)))
	return None


def main():
	ap = argparse.ArgumentParser(
		description='Seeded LLM request traces (Mooncake format).')
	ap.add_argument('shape', nargs='?', choices=list(SHAPES))
	ap.add_argument('--list', action='store_true',
			help='print the shape names and exit')
	ap.add_argument('--check', action='store_true',
			help='check every shape and exit')
	ap.add_argument('--requests', type=int, default=None)
	ap.add_argument('--seed', type=int, default=1)
	args = ap.parse_args()

	if args.list:
		print('\n'.join(SHAPES))
		return 0
	if args.requests is not None and args.requests < 0:
		ap.error('--requests must be >= 0')
	if args.check:
		bad = 0
		for shape in SHAPES:
			why = check(shape, args.requests or 500)
			if why:
				print('trace-shapes: %s: %s' % (shape, why))
				bad += 1
		return 1 if bad else 0
	if args.shape is None:
		ap.error('SHAPE is required (see --list)')
	if args.requests is None:
		args.requests = 4000

	rng = random.Random(args.seed)
	try:
		emit(SHAPES[args.shape](rng, args.requests), sys.stdout)
		sys.stdout.flush()
	except BrokenPipeError:		# e.g. piped into head
		sys.stdout = None
	return 0


if __name__ == '__main__':
	sys.exit(main())
