import { describe, expect, it } from 'vitest';
import { COURSE_IDS } from '@agent-economy/contracts';
import { builtinReasoner } from '../../servers/src/ai';
import { HttpError } from '../../servers/src/runtime/errors';
import { curriculum } from '../../servers/src/services/education/curriculum';
import { educationHandlers } from '../../servers/src/services/education/handlers';
import {
  assembleLesson,
  exerciseTask,
  gradeAnswers,
  lessonTask,
  locateLesson,
  quizTask,
  toStoredQuestions,
  tutorConfidence,
  tutorTask,
  TutorIndex,
} from '../../servers/src/services/education/domain';

const reasoner = builtinReasoner();
const tutor = new TutorIndex(curriculum);

describe('curriculum', () => {
  it('holds six courses of at least five complete lessons each', () => {
    expect(curriculum.map((c) => c.id)).toEqual([
      'foundations',
      'tool-use',
      'memory',
      'multi-agent-systems',
      'rag',
      'deployment',
    ]);
    // The contract's CourseId hint names the same courses.
    expect(curriculum.map((c) => c.id)).toEqual([...COURSE_IDS]);
    const ids = new Set<string>();
    for (const course of curriculum) {
      expect(course.lessons.length).toBeGreaterThanOrEqual(5);
      for (const prerequisite of course.prerequisites) expect(curriculum.some((c) => c.id === prerequisite)).toBe(true);
      for (const lesson of course.lessons) {
        ids.add(`${course.id}/${lesson.id}`);
        expect(lesson.objectives.length).toBeGreaterThanOrEqual(3);
        expect(lesson.sections.length).toBeGreaterThanOrEqual(3);
        expect(lesson.sections.filter((s) => s.code).length).toBeGreaterThanOrEqual(1);
        expect(lesson.keyTakeaways.length).toBeGreaterThanOrEqual(3);
        expect(lesson.questions.length).toBeGreaterThanOrEqual(4);
        for (const q of lesson.questions) expect(new Set([q.correct, ...q.distractors]).size).toBe(4);
        expect(lesson.exercise.solution.length).toBeGreaterThan(lesson.exercise.starterCode.length / 2);
      }
    }
    expect(ids.size).toBe(curriculum.reduce((n, c) => n + c.lessons.length, 0));
  });
});

describe('lessons', () => {
  it('composes the lesson from its material, with the next lesson linked', async () => {
    const location = locateLesson(curriculum, 'foundations', 'agent-loop');
    const { output, generator } = await reasoner.run(lessonTask(location));
    const lesson = assembleLesson(location, output, generator);
    expect(generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
    expect(lesson.position).toBe(2);
    expect(lesson.introduction).toContain('lesson 2 of 5 in');
    expect(lesson.sections.map((s) => s.heading)).toEqual(location.lesson.sections.map((s) => s.heading));
    expect(lesson.sections.some((s) => s.code?.source.length)).toBe(true);
    expect(lesson.keyTakeaways).toEqual(location.lesson.keyTakeaways);
    expect(lesson.nextLesson).toEqual({
      courseId: 'foundations',
      lessonId: 'prompting-for-agents',
      title: curriculum[0]!.lessons[2]!.title,
    });
    const last = locateLesson(curriculum, 'deployment', 'security-and-secrets');
    expect(assembleLesson(last, (await reasoner.run(lessonTask(last))).output, generator).nextLesson).toBeNull();
  });

  it('puts the section most relevant to a focus first', async () => {
    const location = locateLesson(curriculum, 'rag', 'lexical-and-dense-retrieval');
    const plain = (await reasoner.run(lessonTask(location))).output.sections.map((s) => s.heading);
    const focused = (await reasoner.run(lessonTask(location, 'reciprocal rank fusion for hybrid retrieval'))).output;
    expect(focused.sections[0]!.heading).toMatch(/hybrid|fusion/i);
    expect(focused.sections[0]!.heading).not.toBe(plain[0]);
    expect([...focused.sections.map((s) => s.heading)].sort()).toEqual([...plain].sort());
    expect(focused.introduction).toContain('reciprocal rank fusion');
  });

  it('reports an unknown lesson with the lessons that exist', () => {
    try {
      locateLesson(curriculum, 'memory', 'nope');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(HttpError);
      expect((error as HttpError).status).toBe(404);
      expect((error as HttpError).details).toEqual({ available: curriculum[2]!.lessons.map((l) => l.id) });
    }
  });
});

describe('quizzes', () => {
  const location = locateLesson(curriculum, 'tool-use', 'tool-design');

  it('generates the asked number of questions, each with one correct choice among four', async () => {
    for (const count of [3, 5, 10]) {
      const questions = toStoredQuestions((await reasoner.run(quizTask(location, count, `quiz_seed${count}`))).output);
      expect(questions).toHaveLength(count);
      expect(new Set(questions.map((q) => q.prompt + q.choices.join())).size).toBe(count);
      for (const q of questions) {
        expect(q.choices).toHaveLength(4);
        expect(new Set(q.choices).size).toBe(4);
        const bank = location.lesson.questions.find((b) => b.prompt === q.prompt);
        const correct = bank ? bank.correct : q.choices[q.answer]!;
        expect(q.choices[q.answer]).toBe(correct);
        if (!bank) expect(location.lesson.keyTakeaways).toContain(correct);
      }
    }
  });

  it('is reproducible from its quiz id and differs between ids', async () => {
    const a = (await reasoner.run(quizTask(location, 5, 'quiz_aaaaaaaaaaaaaaaa'))).output;
    const again = (await reasoner.run(quizTask(location, 5, 'quiz_aaaaaaaaaaaaaaaa'))).output;
    const b = (await reasoner.run(quizTask(location, 5, 'quiz_bbbbbbbbbbbbbbbb'))).output;
    expect(again).toEqual(a);
    expect(b).not.toEqual(a);
  });

  it('grades: score, percent rounding and the 70 percent pass mark', () => {
    const questions = toStoredQuestions({
      questions: [0, 1, 2].map((answer) => ({
        prompt: `p${answer}`,
        choices: ['a', 'b', 'c'],
        answer,
        explanation: 'because',
      })),
    });
    const twoOfThree = gradeAnswers(questions, [
      { questionId: 'q1', choice: 0 },
      { questionId: 'q2', choice: 1 },
      { questionId: 'q3', choice: 0 },
    ]);
    expect(twoOfThree).toMatchObject({ score: 2, total: 3, percent: 67, passed: false });
    expect(
      gradeAnswers(
        questions,
        questions.map((q) => ({ questionId: q.id, choice: q.answer })),
      ),
    ).toMatchObject({ score: 3, percent: 100, passed: true });
    expect(gradeAnswers(questions, [{ questionId: 'q2', choice: 1 }])).toMatchObject({ score: 1, percent: 33 });
  });
});

describe('exercises', () => {
  it('carries the lesson’s challenge, starter code and solution', async () => {
    const location = locateLesson(curriculum, 'memory', 'memory-compression');
    const { output } = await reasoner.run(exerciseTask(location));
    expect(output.title).toBe(location.lesson.exercise.title);
    expect(output.starterCode).toBe(location.lesson.exercise.starterCode);
    expect(output.solution).toBe(location.lesson.exercise.solution);
    expect(output.challenge).toContain(location.lesson.title);
  });
});

describe('tutor', () => {
  const cases: [string, string, string][] = [
    ['What do the BM25 parameters k1 and b control?', 'rag', 'lexical-and-dense-retrieval'],
    ['What goes in the PAYMENT-REQUIRED header of a 402 response?', 'tool-use', 'http-tools-and-payments'],
    ['How should chunk size and overlap be chosen?', 'rag', 'chunking'],
    ['How do I retry with exponential backoff and jitter?', 'deployment', 'reliability'],
    ['What step budget or stopping condition ends an agent loop?', 'foundations', 'agent-loop'],
    ['How do HNSW indexes find nearest neighbours among embeddings?', 'memory', 'embeddings-and-vector-stores'],
  ];
  for (const [question, courseId, lessonId] of cases) {
    it(`cites ${courseId}/${lessonId} for “${question}”`, async () => {
      const passages = tutor.retrieve(question);
      const { output } = await reasoner.run(tutorTask(question, passages));
      const cited = output.used.map((i) => passages[i]!);
      expect(cited.some((p) => p.courseId === courseId && p.lessonId === lessonId)).toBe(true);
      expect(output.answer).toContain(cited[0]!.lessonTitle);
      for (const excerpt of output.excerpts)
        expect(passages.some((p) => p.text.replace(/\s+/g, ' ').includes(excerpt))).toBe(true);
      expect(tutorConfidence(question, cited)).toBeGreaterThanOrEqual(0.5);
    });
  }

  it('ranks passages best first and restricts to a course on request', () => {
    const passages = tutor.retrieve('What do the BM25 parameters k1 and b control?');
    expect(passages.map((p) => p.score)).toEqual([...passages.map((p) => p.score)].sort((a, b) => b - a));
    expect(
      tutor
        .retrieve('How do I retry with exponential backoff and jitter?', 'tool-use')
        .every((p) => p.courseId === 'tool-use'),
    ).toBe(true);
  });

  it('refuses questions the material does not cover', () => {
    for (const question of ['What is the capital of France?', 'best pizza recipe with mozzarella', 'zzzz qqqq']) {
      expect(() => tutor.retrieve(question)).toThrowError(
        expect.objectContaining({ status: 422, code: 'question_out_of_scope' }),
      );
    }
  });
});

// A deterministic engine's lesson is composed once and kept (frozen, so that it is serialized once); an LLM's is
// written afresh each call. The engines here are the built-in one, counted, and the same rules declared as not
// deterministic.
describe('lesson handler', () => {
  const counted = (deterministic: boolean) => {
    const engine = builtinReasoner();
    const runs: string[] = [];
    return {
      runs,
      reasoner: {
        generator: engine.generator,
        deterministic,
        run: ((task) => {
          runs.push(task.name);
          return engine.run(task);
        }) as typeof engine.run,
      },
    };
  };
  const lesson = async (handlers: ReturnType<typeof educationHandlers>, body: Record<string, string>) =>
    (await (handlers.lesson as (args: unknown) => Promise<unknown>)({ body })) as {
      status: number;
      body: { sections: { heading: string }[] };
    };
  const address = { courseId: 'rag', lessonId: 'chunking' };

  it('keeps a deterministic engine’s lesson by address and focus, and asks an LLM every time', async () => {
    const kept = counted(true);
    const handlers = educationHandlers({ courses: curriculum, tutorIndex: tutor, store: {} as never, ...kept });
    const first = await lesson(handlers, address);
    const again = await lesson(handlers, address);
    expect(again.body).toBe(first.body);
    expect(Object.isFrozen(first.body) && Object.isFrozen(first.body.sections[0])).toBe(true);
    const focused = await lesson(handlers, { ...address, focus: 'metadata on chunks' });
    expect(focused.body).not.toBe(first.body);
    expect(focused.body.sections[0]!.heading).toBe('Metadata on every chunk');
    expect(kept.runs).toEqual(['lesson', 'lesson']);

    const llm = counted(false);
    const asked = educationHandlers({ courses: curriculum, tutorIndex: tutor, store: {} as never, ...llm });
    const one = await lesson(asked, address);
    const two = await lesson(asked, address);
    expect(two.body).toEqual(one.body);
    expect(two.body).not.toBe(one.body);
    expect(Object.isFrozen(one.body)).toBe(false);
    expect(llm.runs).toEqual(['lesson', 'lesson']);
  });
});
