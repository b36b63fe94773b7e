import { createHash } from 'node:crypto';
import type {
  Catalog,
  CourseDetail,
  Generator,
  GradedAnswer,
  Lesson,
  LessonPreview,
  LessonSection,
} from '@agent-economy/contracts';
import { z } from 'zod';
import { Bm25Index, sentences, tokenize, type AiTask } from '../../ai';
import { notFound, unprocessable } from '../../runtime/errors';
import type { CourseMaterial, LessonMaterial } from './curriculum';

// Plain functions over the curriculum: what the routes serve, with no HTTP and no database in sight.

export interface LessonLocation {
  course: CourseMaterial;
  lesson: LessonMaterial;
  /** 1-based. */
  position: number;
}

const preview = (lesson: LessonMaterial, position: number): LessonPreview => ({
  id: lesson.id,
  position,
  title: lesson.title,
  preview: lesson.preview,
  estimatedMinutes: lesson.estimatedMinutes,
});

const courseFields = (course: CourseMaterial) => ({
  id: course.id,
  title: course.title,
  description: course.description,
  difficulty: course.difficulty,
  prerequisites: course.prerequisites,
  lessonCount: course.lessons.length,
  estimatedMinutes: course.lessons.reduce((sum, l) => sum + l.estimatedMinutes, 0),
});

export function buildCatalog(courses: readonly CourseMaterial[]): Catalog {
  return {
    courses: courses.map((course) => ({
      ...courseFields(course),
      lessons: course.lessons.map((l, i) => preview(l, i + 1)),
    })),
    totalCourses: courses.length,
    totalLessons: courses.reduce((sum, c) => sum + c.lessons.length, 0),
  };
}

export function findCourse(courses: readonly CourseMaterial[], courseId: string): CourseMaterial {
  const course = courses.find((c) => c.id === courseId);
  if (!course) throw notFound('course_not_found', `No course "${courseId}"`, { available: courses.map((c) => c.id) });
  return course;
}

export function courseDetail(courses: readonly CourseMaterial[], courseId: string): CourseDetail {
  const course = findCourse(courses, courseId);
  return {
    ...courseFields(course),
    lessons: course.lessons.map((l, i) => ({ ...preview(l, i + 1), objectives: l.objectives })),
  };
}

export function locateLesson(courses: readonly CourseMaterial[], courseId: string, lessonId: string): LessonLocation {
  const course = findCourse(courses, courseId);
  const index = course.lessons.findIndex((l) => l.id === lessonId);
  if (index < 0) {
    throw notFound('lesson_not_found', `Course "${courseId}" has no lesson "${lessonId}"`, {
      available: course.lessons.map((l) => l.id),
    });
  }
  return { course, lesson: course.lessons[index]!, position: index + 1 };
}

// ---------------------------------------------------------------- lessons

export interface LessonBody {
  introduction: string;
  sections: LessonSection[];
  keyTakeaways: string[];
}

const CodeSchema = z.object({
  language: z.enum(['typescript', 'bash', 'json']),
  caption: z.string(),
  source: z.string(),
});
const LessonBodySchema: z.ZodType<LessonBody> = z.object({
  introduction: z.string().min(1),
  sections: z
    .array(z.object({ heading: z.string().min(1), explanation: z.string().min(1), code: CodeSchema.optional() }))
    .min(1),
  keyTakeaways: z.array(z.string().min(1)).min(1),
});

interface LessonTaskInput {
  course: { title: string; difficulty: string; lessonCount: number };
  position: number;
  lesson: Pick<LessonMaterial, 'title' | 'preview' | 'objectives' | 'sections' | 'keyTakeaways'>;
  focus?: string;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

/** Orders sections by relevance to the focus (BM25), keeping the original order among equals. */
function orderByFocus<T extends { heading: string; body: string }>(
  sections: readonly T[],
  focus: string | undefined,
): T[] {
  if (!focus) return [...sections];
  const index = new Bm25Index(sections.map((s, i) => ({ doc: i, text: `${s.heading} ${s.heading} ${s.body}` })));
  const scores = new Map(index.search(focus, sections.length).map((h) => [h.doc, h.score]));
  return sections
    .map((section, i) => ({ section, i, score: scores.get(i) ?? 0 }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map((x) => x.section);
}

function composeLesson(input: LessonTaskInput): LessonBody {
  const { lesson, course, position, focus } = input;
  const objectives = lesson.objectives.map(lowerFirst);
  const intro = [
    `“${lesson.title}” is lesson ${position} of ${course.lessonCount} in ${course.title} (${course.difficulty}).`,
    lesson.preview,
    `By the end of it you will be able to ${objectives.slice(0, -1).join('; ')}${objectives.length > 1 ? '; and ' : ''}${objectives.at(-1) ?? ''}`.replace(
      /\.?$/,
      '.',
    ),
  ];
  const ordered = orderByFocus(lesson.sections, focus);
  if (focus) {
    intro.push(
      `You asked to focus on “${focus}”: the section most relevant to it, “${ordered[0]?.heading}”, comes first.`,
    );
  }
  return {
    introduction: intro.join(' '),
    sections: ordered.map((s) => ({ heading: s.heading, explanation: s.body, ...(s.code ? { code: s.code } : {}) })),
    keyTakeaways: [...lesson.keyTakeaways],
  };
}

export function lessonTask(location: LessonLocation, focus?: string): AiTask<LessonTaskInput, LessonBody> {
  const { course, lesson, position } = location;
  return {
    name: 'lesson',
    instructions:
      'You are a senior engineer teaching developers to build autonomous agents. Write the full lesson from the material ' +
      'given: an introduction, one section per source section (same headings, keep every code example verbatim, explain ' +
      'it clearly), and the key takeaways. Stay faithful to the material; add no claims it does not support. If a focus ' +
      'is given, put the sections most relevant to it first.',
    input: {
      course: { title: course.title, difficulty: course.difficulty, lessonCount: course.lessons.length },
      position,
      lesson: {
        title: lesson.title,
        preview: lesson.preview,
        objectives: lesson.objectives,
        sections: lesson.sections,
        keyTakeaways: lesson.keyTakeaways,
      },
      ...(focus ? { focus } : {}),
    },
    output: LessonBodySchema,
    builtin: composeLesson,
  };
}

export function assembleLesson(location: LessonLocation, body: LessonBody, generator: Generator): Lesson {
  const { course, lesson, position } = location;
  const next = course.lessons[position];
  return {
    courseId: course.id,
    lessonId: lesson.id,
    title: lesson.title,
    difficulty: course.difficulty,
    position,
    estimatedMinutes: lesson.estimatedMinutes,
    objectives: lesson.objectives,
    ...body,
    nextLesson: next ? { courseId: course.id, lessonId: next.id, title: next.title } : null,
    generator,
  };
}

// ---------------------------------------------------------------- quizzes

/** A quiz question as stored: with its answer key, which never leaves the server before grading. */
export interface StoredQuestion {
  id: string;
  prompt: string;
  choices: string[];
  answer: number;
  explanation: string;
}

const GeneratedQuizSchema = z.object({
  questions: z
    .array(
      z.object({
        prompt: z.string().min(1),
        choices: z.array(z.string().min(1)).min(2).max(6),
        answer: z.number().int().min(0),
        explanation: z.string().min(1),
      }),
    )
    .min(1),
});
type GeneratedQuiz = z.infer<typeof GeneratedQuizSchema>;

interface QuizTaskInput {
  seed: string;
  questionCount: number;
  lesson: Pick<LessonMaterial, 'title' | 'sections' | 'keyTakeaways' | 'questions'>;
  /** Takeaways of other lessons in the course: wrong answers for "which is a takeaway of this lesson". */
  otherTakeaways: string[];
}

/** mulberry32 seeded from a string: the built-in quiz is reproducible from its quiz id. */
function seededRandom(seed: string): () => number {
  let state = createHash('sha256').update(seed).digest().readUInt32LE(0);
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function composeQuiz(input: QuizTaskInput): GeneratedQuiz {
  const random = seededRandom(input.seed);
  const bank = shuffle(input.lesson.questions, random).map((q) => ({
    prompt: q.prompt,
    correct: q.correct,
    wrong: [...q.distractors],
    explanation: q.explanation,
  }));
  // Beyond the question bank, each key takeaway becomes a recognition question against other lessons' takeaways.
  const fromTakeaways = shuffle(input.lesson.keyTakeaways, random).map((takeaway) => ({
    prompt: `Which of these statements is a key takeaway of the lesson “${input.lesson.title}”?`,
    correct: takeaway,
    wrong: shuffle(input.otherTakeaways, random).slice(0, 3),
    explanation: `“${takeaway}” is one of the lesson's key takeaways; the other statements come from other lessons.`,
  }));
  const picked = [...bank, ...fromTakeaways.filter((q) => q.wrong.length === 3)].slice(0, input.questionCount);
  return {
    questions: picked.map((q) => {
      const choices = shuffle([q.correct, ...q.wrong], random);
      return { prompt: q.prompt, choices, answer: choices.indexOf(q.correct), explanation: q.explanation };
    }),
  };
}

export function quizTask(
  location: LessonLocation,
  questionCount: number,
  seed: string,
): AiTask<QuizTaskInput, GeneratedQuiz> {
  const { course, lesson } = location;
  return {
    name: 'quiz',
    instructions:
      `Write ${questionCount} multiple-choice questions that check understanding of the lesson given. Each question has ` +
      'four choices, exactly one correct (its index in `answer`), plausible wrong choices, and an explanation of the ' +
      'correct answer. Ask only what the lesson material answers.',
    input: {
      seed,
      questionCount,
      lesson: {
        title: lesson.title,
        sections: lesson.sections,
        keyTakeaways: lesson.keyTakeaways,
        questions: lesson.questions,
      },
      otherTakeaways: course.lessons.filter((l) => l.id !== lesson.id).flatMap((l) => l.keyTakeaways),
    },
    output: GeneratedQuizSchema,
    builtin: composeQuiz,
  };
}

/** Numbers the generated questions and checks every answer key points at a choice. */
export function toStoredQuestions(quiz: GeneratedQuiz): StoredQuestion[] {
  return quiz.questions
    .filter((q) => q.answer < q.choices.length)
    .map((q, i) => ({
      id: `q${i + 1}`,
      prompt: q.prompt,
      choices: q.choices,
      answer: q.answer,
      explanation: q.explanation,
    }));
}

export interface Grade {
  score: number;
  total: number;
  percent: number;
  passed: boolean;
  results: GradedAnswer[];
}

export const PASS_PERCENT = 70;

export function gradeAnswers(questions: StoredQuestion[], answers: { questionId: string; choice: number }[]): Grade {
  const byId = new Map(questions.map((q) => [q.id, q]));
  const chosen = new Map<string, number>();
  for (const { questionId, choice } of answers) {
    const question = byId.get(questionId);
    if (!question)
      throw unprocessable('unknown_question', `The quiz has no question "${questionId}"`, {
        questionIds: [...byId.keys()],
      });
    if (chosen.has(questionId))
      throw unprocessable('duplicate_answer', `Question "${questionId}" is answered more than once`);
    if (choice >= question.choices.length) {
      throw unprocessable(
        'choice_out_of_range',
        `Question "${questionId}" has choices 0 to ${question.choices.length - 1}`,
      );
    }
    chosen.set(questionId, choice);
  }
  const results = questions.map((q) => {
    const pick = chosen.get(q.id) ?? null;
    return {
      questionId: q.id,
      chosen: pick,
      correctChoice: q.answer,
      correct: pick === q.answer,
      explanation: q.explanation,
    };
  });
  const score = results.filter((r) => r.correct).length;
  const percent = Math.round((score * 100) / questions.length);
  return { score, total: questions.length, percent, passed: percent >= PASS_PERCENT, results };
}

// ---------------------------------------------------------------- exercises

export interface ExerciseBody {
  title: string;
  challenge: string;
  requirements: string[];
  starterCode: string;
  solution: string;
  hints: string[];
}

const ExerciseBodySchema: z.ZodType<ExerciseBody> = z.object({
  title: z.string().min(1),
  challenge: z.string().min(1),
  requirements: z.array(z.string().min(1)).min(1),
  starterCode: z.string().min(1),
  solution: z.string().min(1),
  hints: z.array(z.string()),
});

interface ExerciseTaskInput {
  lessonTitle: string;
  objectives: string[];
  exercise: LessonMaterial['exercise'];
}

export function exerciseTask(location: LessonLocation): AiTask<ExerciseTaskInput, ExerciseBody> {
  const { lesson } = location;
  return {
    name: 'exercise',
    instructions:
      'Write a TypeScript coding exercise for the lesson: a challenge, requirements, starter code with TODOs that ' +
      'compiles, hints, and a complete working solution. Base it on the exercise material given.',
    input: { lessonTitle: lesson.title, objectives: lesson.objectives, exercise: lesson.exercise },
    output: ExerciseBodySchema,
    builtin: ({ lessonTitle, objectives, exercise }) => ({
      title: exercise.title,
      challenge: `${exercise.challenge}\n\nThis exercise practises “${lessonTitle}”: ${objectives.map(lowerFirst).join('; ')}.`,
      requirements: [...exercise.requirements],
      starterCode: exercise.starterCode,
      solution: exercise.solution,
      hints: [...exercise.hints],
    }),
  };
}

// ---------------------------------------------------------------- tutor

export interface Passage {
  courseId: string;
  courseTitle: string;
  lessonId: string;
  lessonTitle: string;
  heading: string;
  text: string;
  score: number;
}

export interface TutorOutput {
  answer: string;
  /** Indexes into the passages the answer used, in the order it used them. */
  used: number[];
  excerpts: string[];
}

interface TutorTaskInput {
  question: string;
  passages: Passage[];
}

const TutorOutputSchema: z.ZodType<TutorOutput> = z.object({
  answer: z.string().min(1),
  used: z.array(z.number().int().min(0)).min(1),
  excerpts: z.array(z.string()),
});

/** The best passage must contain at least this share of the question's terms, or the question is out of scope. */
export const MIN_QUESTION_COVERAGE = 0.4;

/**
 * The tutor's terms: the shared tokenizer's stems, with a final "e" dropped so that the forms of one verb meet
 * ("share", "shared", "shares", "sharing" -> "shar"; "cache", "cached" -> "cach"), as Porter's step 5 does.
 */
export function tutorTerms(text: string): string[] {
  return tokenize(text).map((t) => (t.length > 3 && t.endsWith('e') && !t.endsWith('ee') ? t.slice(0, -1) : t));
}

/** The course material cut into sections and indexed for BM25, built once per process. */
export class TutorIndex {
  private readonly index: Bm25Index<Passage>;

  constructor(courses: readonly CourseMaterial[]) {
    const entries = courses.flatMap((course) =>
      course.lessons.flatMap((lesson) => [
        ...lesson.sections.map((section) => ({
          courseId: course.id,
          courseTitle: course.title,
          lessonId: lesson.id,
          lessonTitle: lesson.title,
          heading: section.heading,
          text: section.body,
          score: 0,
          extra: section.code?.caption ?? '',
        })),
        {
          courseId: course.id,
          courseTitle: course.title,
          lessonId: lesson.id,
          lessonTitle: lesson.title,
          heading: 'Key takeaways',
          text: lesson.keyTakeaways.join(' '),
          score: 0,
          extra: '',
        },
      ]),
    );
    // Headings and lesson titles say what a section is about: they count twice.
    this.index = new Bm25Index(
      entries.map(({ extra, ...doc }) => ({
        doc,
        text: `${doc.lessonTitle} ${doc.heading} ${doc.heading} ${doc.text} ${extra}`,
      })),
      undefined,
      undefined,
      tutorTerms,
    );
  }

  /**
   * The passages that answer a question, best first. A question the material does not cover (no
   * section shares enough of its terms) is refused with 422, before any charge.
   */
  retrieve(question: string, courseId?: string): Passage[] {
    const terms = new Set(tutorTerms(question));
    const hits = this.index.search(question, 8, courseId ? (p) => p.courseId === courseId : undefined);
    const top = hits[0];
    if (!top || top.matched.length < Math.max(1, MIN_QUESTION_COVERAGE * terms.size)) {
      throw unprocessable(
        'question_out_of_scope',
        courseId
          ? `The course "${courseId}" does not cover this question; ask without courseId to search every course`
          : 'The course material does not cover this question; ask about building, running or scaling agents',
      );
    }
    return hits
      .filter((h) => h.score >= top.score * 0.5)
      .slice(0, 3)
      .map((h) => ({ ...h.doc, score: Math.round(h.score * 1000) / 1000 }));
  }
}

/** Extractive answer: the sentences of the best passages that carry the most of the question's weight. */
function composeTutorAnswer({ question, passages }: TutorTaskInput): TutorOutput {
  const terms = new Set(tutorTerms(question));
  const scored = passages.map((passage, index) => {
    const ranked = sentences(passage.text)
      .map((sentence, order) => ({
        sentence,
        order,
        hits: new Set(tutorTerms(sentence).filter((t) => terms.has(t))).size,
      }))
      .filter((s) => s.hits > 0)
      .sort((a, b) => b.hits - a.hits || a.order - b.order)
      .slice(0, 2)
      .sort((a, b) => a.order - b.order);
    return { passage, index, picked: ranked.map((r) => r.sentence) };
  });
  const used = scored.filter((s) => s.picked.length > 0);
  const chosen = used.length
    ? used
    : scored.slice(0, 1).map((s) => ({ ...s, picked: sentences(s.passage.text).slice(0, 2) }));
  const paragraphs = chosen.map(
    ({ passage, picked }) =>
      `From “${passage.lessonTitle}” (${passage.courseTitle}), ${passage.heading}: ${picked.join(' ')}`,
  );
  const lessons = [...new Set(chosen.map((c) => `“${c.passage.lessonTitle}”`))];
  return {
    answer: `${paragraphs.join('\n\n')}\n\nTo go deeper, study ${lessons.join(' and ')}.`,
    used: chosen.map((c) => c.index),
    excerpts: chosen.map((c) => c.picked[0] ?? ''),
  };
}

export function tutorTask(question: string, passages: Passage[]): AiTask<TutorTaskInput, TutorOutput> {
  return {
    name: 'tutor',
    instructions:
      'You are a tutor for developers building autonomous agents. Answer the question using only the numbered passages ' +
      'given (their index is their position in the array). Be concrete and brief. In `used`, list the indexes of the ' +
      'passages you relied on; in `excerpts`, for each of them, the sentence you relied on most.',
    input: { question, passages },
    output: TutorOutputSchema,
    builtin: composeTutorAnswer,
  };
}

/** How much of the question the cited passages cover: the share of its known terms they contain. */
export function tutorConfidence(question: string, passages: Passage[]): number {
  const terms = [...new Set(tutorTerms(question))];
  if (!terms.length) return 0;
  const covered = new Set(passages.flatMap((p) => tutorTerms(`${p.lessonTitle} ${p.heading} ${p.text}`)));
  return Math.round((terms.filter((t) => covered.has(t)).length / terms.length) * 100) / 100;
}
