import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import axios from 'axios';
import {
  BadRequestError,
  NotFoundError,
  PaymentRequiredError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { builtinReasoner } from '../servers/src/ai';
import { createEducationApp } from '../servers/src/services/education';
import { curriculum } from '../servers/src/services/education/curriculum';
import { locateLesson, quizTask, toStoredQuestions } from '../servers/src/services/education/domain';
import { educationStore } from '../servers/src/services/education/store';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';

let service: RunningService;
const education = () => service.client.education;

beforeAll(async () => {
  service = await startService(createEducationApp);
});
afterAll(() => service?.close());

async function quizCount(): Promise<number> {
  const row = await service.database.db
    .selectFrom('education_quizzes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('free routes', () => {
  it('lists the six courses with their lessons', async () => {
    const catalog = await education().catalog();
    expect(catalog.courses.map((c) => c.id)).toEqual([
      'foundations',
      'tool-use',
      'memory',
      'multi-agent-systems',
      'rag',
      'deployment',
    ]);
    expect(catalog.totalCourses).toBe(6);
    expect(catalog.totalLessons).toBe(30);
    for (const course of catalog.courses) {
      expect(course.lessonCount).toBe(course.lessons.length);
      expect(course.lessonCount).toBeGreaterThanOrEqual(5);
      expect(course.estimatedMinutes).toBe(course.lessons.reduce((sum, l) => sum + l.estimatedMinutes, 0));
      expect(course.lessons.map((l) => l.position)).toEqual(course.lessons.map((_, i) => i + 1));
      for (const lesson of course.lessons) expect(lesson.preview.length).toBeGreaterThan(20);
    }
    expect(catalog.courses.find((c) => c.id === 'foundations')?.difficulty).toBe('beginner');
    expect(catalog.courses.find((c) => c.id === 'multi-agent-systems')?.prerequisites).toEqual([
      'foundations',
      'tool-use',
    ]);
  });

  it('shows a course with each lesson’s objectives', async () => {
    const course = await education().course({ params: { courseId: 'rag' } });
    expect(course.title).toBe('Retrieval-Augmented Generation');
    expect(course.lessons.map((l) => l.id)).toEqual([
      'rag-basics',
      'chunking',
      'lexical-and-dense-retrieval',
      'reranking-and-context-assembly',
      'evaluating-rag',
    ]);
    for (const lesson of course.lessons) expect(lesson.objectives.length).toBeGreaterThanOrEqual(3);
  });

  it('answers an unknown course with 404 course_not_found listing the courses', async () => {
    const error = await education()
      .course({ params: { courseId: 'cooking' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('course_not_found');
    expect(error.details.available).toHaveLength(6);
  });
});

describe('paid routes quote their spec prices and serve nothing unpaid', () => {
  const cases = [
    ['lesson', { courseId: 'tool-use', lessonId: 'function-calling' }, '50000'],
    ['quiz', { action: 'generate', courseId: 'memory', lessonId: 'context-windows' }, '30000'],
    ['exercise', { courseId: 'rag', lessonId: 'chunking' }, '50000'],
    ['tutor', { question: 'How do I stop an agent loop that never finishes?' }, '30000'],
  ] as const;
  for (const [route, body, amount] of cases) {
    it(`${route}: 402 for ${amount} atomic units`, async () => {
      const before = await quizCount();
      const error = await (education()[route] as (args: unknown) => Promise<unknown>)({ body }).catch((e) => e);
      expect(error).toBeInstanceOf(PaymentRequiredError);
      const quote = (error as PaymentRequiredError).quote!;
      expect(quote.resource.url).toBe(`${service.url}/api/${route}`);
      expect(quote.accepts[0]).toMatchObject({
        scheme: 'exact',
        amount,
        asset: USDC_DEVNET,
        network: SOLANA_DEVNET,
        payTo: service.context.paywall.payTo,
      });
      expect(await quizCount()).toBe(before);
    });
  }

  it('refuses before quoting what would fail anyway: unknown lessons 404, uncovered questions 422', async () => {
    const lesson = await education()
      .lesson({ body: { courseId: 'tool-use', lessonId: 'no-such-lesson' } })
      .catch((e) => e);
    expect(lesson).toBeInstanceOf(NotFoundError);
    expect(lesson.code).toBe('lesson_not_found');
    expect(lesson.details.available).toContain('function-calling');
    const exercise = await education()
      .exercise({ body: { courseId: 'knitting', lessonId: 'chunking' } })
      .catch((e) => e);
    expect(exercise.code).toBe('course_not_found');
    const quiz = await education()
      .quiz({ body: { action: 'generate', courseId: 'rag', lessonId: 'nope' } })
      .catch((e) => e);
    expect(quiz.code).toBe('lesson_not_found');
    const tutor = await education()
      .tutor({ body: { question: 'What is the capital of France?' } })
      .catch((e) => e);
    expect(tutor).toBeInstanceOf(UnprocessableEntityError);
    expect(tutor.code).toBe('question_out_of_scope');
    const narrowed = await education()
      .tutor({ body: { question: 'What do the BM25 parameters k1 and b control?', courseId: 'deployment' } })
      .catch((e) => e);
    expect(narrowed.code).toBe('question_out_of_scope');
    expect(
      (
        await education()
          .tutor({ body: { question: 'What do the BM25 parameters k1 and b control?', courseId: 'rag' } })
          .catch((e) => e)
      ).status,
    ).toBe(402);
  });

  it('names the bad field before quoting', async () => {
    const error = await education()
      .lesson({ body: { courseId: 'Tool Use!', lessonId: 'x' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.fields).toEqual([{ field: 'body.courseId', message: 'must be a lowercase slug such as "tool-use"' }]);
  });
});

describe('paid lessons', () => {
  let economy: Economy;
  beforeAll(async () => {
    economy = await startEconomy();
  });
  afterAll(() => economy?.close());

  it('serves a lesson asked again the same and charges every call; the focus leads', async () => {
    // Through the SDK, paid: a lesson asked again is the same lesson (the built-in engine's is kept; the handler's
    // test in tests/unit/education-domain.test.ts shows it composed once) and each call is paid. A focus is another
    // lesson: its sections in another order.
    const sent: { status: number; etag: unknown; length: unknown; bytes: number }[] = [];
    const http = axios.create();
    http.interceptors.response.use((response) => {
      const { etag, 'content-length': length } = response.headers;
      sent.push({ status: response.status, etag, length, bytes: Buffer.byteLength(String(response.data)) });
      return response;
    });
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      axios: http,
      maxRetries: 0,
      payments: { rpcUrl: economy.rpcUrl },
    });
    const address = { courseId: 'rag', lessonId: 'chunking' } as const;
    const first = await client.education.lesson.withResponse({ body: address });
    const again = await client.education.lesson.withResponse({ body: address });
    const focused = await client.education.lesson.withResponse({ body: { ...address, focus: 'metadata on chunks' } });
    expect(again.data).toEqual(first.data);
    expect(first.data.sections.map((s) => s.heading).slice(0, 2)).toEqual([
      'Why documents are split into chunks',
      'Chunk size and overlap',
    ]);
    expect(focused.data.sections[0]!.heading).toBe('Metadata on every chunk');
    expect([...focused.data.sections].sort((a, b) => a.heading.localeCompare(b.heading))).toEqual(
      [...first.data.sections].sort((a, b) => a.heading.localeCompare(b.heading)),
    );
    const transactions = [first, again, focused].map((r) => r.payment?.transaction);
    expect(new Set(transactions).size).toBe(3);
    expect(transactions.every((t) => typeof t === 'string' && t.length > 80)).toBe(true);
    // Answers to a POST carry no ETag, and the length sent is the body's.
    const answers = sent.filter((s) => s.status === 200);
    expect(answers).toHaveLength(3);
    for (const answer of answers) {
      expect(answer.etag).toBeUndefined();
      expect(Number(answer.length)).toBe(answer.bytes);
    }
  });
});

describe('quiz grading round trip', () => {
  it('grades right and wrong answers against the stored answer key, attempt after attempt', async () => {
    // The quiz is generated by the same domain code the paid route runs, stored in the service's database.
    const location = locateLesson(curriculum, 'foundations', 'agent-loop');
    const quizId = 'quiz_0123456789abcdef01234567';
    const { output, generator } = await builtinReasoner().run(quizTask(location, 6, quizId));
    const questions = toStoredQuestions(output);
    expect(questions).toHaveLength(6);
    await educationStore(service.database.db).saveQuiz({
      id: quizId,
      courseId: 'foundations',
      lessonId: 'agent-loop',
      questions,
      generator,
      createdAt: new Date(),
    });

    // Four right, one wrong, one unanswered.
    const answers = questions
      .slice(0, 5)
      .map((q, i) => ({ questionId: q.id, choice: i === 4 ? (q.answer + 1) % q.choices.length : q.answer }));
    const result = await education().quiz({ body: { action: 'grade', quizId, answers } });
    expect(result).toMatchObject({
      action: 'grade',
      quizId,
      courseId: 'foundations',
      lessonId: 'agent-loop',
      attempt: 1,
      score: 4,
      total: 6,
      percent: 67,
      passed: false,
    });
    expect(result.results.map((r) => r.correct)).toEqual([true, true, true, true, false, false]);
    expect(result.results[5]!.chosen).toBeNull();
    expect(result.results[4]!.correctChoice).toBe(questions[4]!.answer);
    expect(result.results[0]!.explanation.length).toBeGreaterThan(10);

    const perfect = await education().quiz({
      body: { action: 'grade', quizId, answers: questions.map((q) => ({ questionId: q.id, choice: q.answer })) },
    });
    expect(perfect).toMatchObject({ attempt: 2, score: 6, percent: 100, passed: true });
  });

  it('refuses answers that do not fit the quiz, recording no attempt', async () => {
    const quizId = 'quiz_fedcba9876543210fedcba98';
    const location = locateLesson(curriculum, 'rag', 'chunking');
    const { output, generator } = await builtinReasoner().run(quizTask(location, 3, quizId));
    const questions = toStoredQuestions(output);
    const store = educationStore(service.database.db);
    await store.saveQuiz({
      id: quizId,
      courseId: 'rag',
      lessonId: 'chunking',
      questions,
      generator,
      createdAt: new Date(),
    });

    const grade = (answers: { questionId: string; choice: number }[]) =>
      education()
        .quiz({ body: { action: 'grade', quizId, answers } })
        .catch((e) => e);
    const unknown = await grade([{ questionId: 'q9', choice: 0 }]);
    expect(unknown).toBeInstanceOf(UnprocessableEntityError);
    expect(unknown.code).toBe('unknown_question');
    expect((await grade([{ questionId: 'q1', choice: 7 }])).code).toBe('choice_out_of_range');
    expect(
      (
        await grade([
          { questionId: 'q1', choice: 0 },
          { questionId: 'q1', choice: 1 },
        ])
      ).code,
    ).toBe('duplicate_answer');
    expect(await store.attemptCount(quizId)).toBe(0);

    const missing = await education()
      .quiz({
        body: { action: 'grade', quizId: 'quiz_00000000000000000000dead', answers: [{ questionId: 'q1', choice: 0 }] },
      })
      .catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.code).toBe('quiz_not_found');
  });
});

describe('bad input gets a 400 naming the field, and stores nothing', () => {
  const cases: [string, string, unknown, string[]][] = [
    ['lesson', 'missing lessonId', { courseId: 'rag' }, ['body.lessonId']],
    ['lesson', 'focus too short', { courseId: 'rag', lessonId: 'chunking', focus: 'a' }, ['body.focus']],
    ['lesson', 'unknown field', { courseId: 'rag', lessonId: 'chunking', level: 3 }, ['body.level']],
    ['quiz', 'no action', { courseId: 'rag', lessonId: 'chunking' }, ['body.action']],
    [
      'quiz',
      'too many questions',
      { action: 'generate', courseId: 'rag', lessonId: 'chunking', questionCount: 11 },
      ['body.questionCount'],
    ],
    [
      'quiz',
      'malformed quiz id',
      { action: 'grade', quizId: 'abc', answers: [{ questionId: 'q1', choice: 0 }] },
      ['body.quizId'],
    ],
    ['quiz', 'no answers', { action: 'grade', quizId: 'quiz_0123456789abcdef01234567', answers: [] }, ['body.answers']],
    [
      'quiz',
      'negative choice',
      { action: 'grade', quizId: 'quiz_0123456789abcdef01234567', answers: [{ questionId: 'q1', choice: -1 }] },
      ['body.answers.0.choice'],
    ],
    ['exercise', 'number for courseId', { courseId: 7, lessonId: 'chunking' }, ['body.courseId']],
    ['tutor', 'question too short', { question: 'hi' }, ['body.question']],
    ['tutor', 'question too long', { question: 'x'.repeat(2001) }, ['body.question']],
    ['tutor', 'bad course slug', { question: 'What is chunk overlap?', courseId: 'RAG' }, ['body.courseId']],
  ];
  for (const [route, label, body, fields] of cases) {
    it(`${route}: ${label}`, async () => {
      const before = await quizCount();
      const error: any = await (education()[route as 'lesson'] as (args: unknown) => Promise<unknown>)({ body }).catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.fields.map((f: { field: string }) => f.field)).toEqual(fields);
      expect(await quizCount()).toBe(before);
    });
  }

  it('course: a path parameter that is not a slug', async () => {
    const error = await education()
      .course({ params: { courseId: 'Not A Slug' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.fields).toEqual([
      { field: 'params.courseId', message: 'must be a lowercase slug such as "tool-use"' },
    ]);
  });
});

describe('a deployment with its own prices', () => {
  let repriced: RunningService;
  beforeAll(async () => {
    repriced = await startService((context) =>
      createEducationApp({
        ...context,
        prices: {
          lesson: { kind: 'fixed', usd: '0.04' },
          catalog: { kind: 'fixed', usd: '0.001' },
          exercise: { kind: 'fixed', usd: '0.000' },
        },
      }),
    );
  });
  afterAll(() => repriced?.close());

  it('quotes, describes and documents the overridden prices alike', async () => {
    const lesson = await repriced.client.education
      .lesson({ body: { courseId: 'rag', lessonId: 'chunking' } })
      .catch((e) => e);
    expect(lesson.quote.accepts[0].amount).toBe('40000');
    const catalog = await repriced.client.education.catalog().catch((e) => e);
    expect(catalog).toBeInstanceOf(PaymentRequiredError);
    expect(catalog.quote.accepts[0].amount).toBe('1000');
    const card = (await fetch(`${repriced.url}/.well-known/agent-card.json`).then((r) => r.json())) as any;
    expect(card.skills[0]).toMatchObject({ name: 'GET /api/catalog', tags: ['x402', 'education', 'paid'] });
    const document = (await fetch(`${repriced.url}/openapi.json`).then((r) => r.json())) as any;
    expect(document.paths['/api/lesson'].post['x-payment']).toMatchObject({ kind: 'fixed', usd: '0.04' });
    // A route priced at zero, however written, is free: it serves instead of quoting 0.
    const exercise = await repriced.client.education.exercise({ body: { courseId: 'rag', lessonId: 'chunking' } });
    expect(exercise.solution.length).toBeGreaterThan(0);
    // The contract itself is untouched: the default deployment still charges the spec's price.
    const original = await education()
      .lesson({ body: { courseId: 'rag', lessonId: 'chunking' } })
      .catch((e) => e);
    expect(original.quote.accepts[0].amount).toBe('50000');
  });
});

describe('integrity: the tutor finds the section that answers, whatever the word form', () => {
  let free: RunningService;
  beforeAll(async () => {
    free = await startService((c) => createEducationApp({ ...c, prices: { tutor: { kind: 'fixed', usd: '0' } } }), {
      id: 'education',
    });
  });
  afterAll(() => free?.close());

  it('matches "share" with "shared" and cites the section that answers first', async () => {
    // The blackboard section reads "they read and write a shared, structured workspace": "share" must find it.
    const answer = await free.client.education.tutor({
      body: { question: 'Which architecture lets agents share a workspace?' },
    });
    expect(answer.citations[0]).toMatchObject({ lessonTitle: 'Orchestration Patterns', section: 'Blackboard' });
    expect(answer.answer).toContain('shared, structured workspace');
    // And the other way round: "shared" finds "share".
    const reverse = await free.client.education.tutor({
      body: { question: 'Are the blind spots of a shared model shared by agents in a debate?' },
    });
    expect(reverse.citations[0]).toMatchObject({ section: 'Debate and critique' });
  });
});
