import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, tiered, type RouteMeta } from '../core/payment';
import { Timestamp } from '../core/chain';
import { Generator } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.
export type Difficulty = 'beginner' | 'intermediate' | 'advanced';
/** The six courses the spec names, in catalog order. */
export const COURSE_IDS = ['foundations', 'tool-use', 'memory', 'multi-agent-systems', 'rag', 'deployment'] as const;
/**
 * A course id: one of COURSE_IDS, which editors complete. Open (`string & {}`) on purpose: the contract checks only
 * the slug, so an unknown course is answered 404 course_not_found listing the courses, not a 400.
 */
export type CourseId = (typeof COURSE_IDS)[number] | (string & {});

export interface LessonPreview {
  id: string;
  position: number;
  title: string;
  preview: string;
  estimatedMinutes: number;
}
export interface LessonOutline extends LessonPreview {
  objectives: string[];
}
export interface CourseSummary {
  id: string;
  title: string;
  description: string;
  difficulty: Difficulty;
  prerequisites: string[];
  lessonCount: number;
  estimatedMinutes: number;
  lessons: LessonPreview[];
}
export interface CourseDetail extends Omit<CourseSummary, 'lessons'> {
  lessons: LessonOutline[];
}
export interface Catalog {
  courses: CourseSummary[];
  totalCourses: number;
  totalLessons: number;
}
export interface CodeExample {
  language: 'typescript' | 'bash' | 'json';
  caption: string;
  source: string;
}
export interface LessonSection {
  heading: string;
  explanation: string;
  code?: CodeExample;
}
export interface LessonRef {
  courseId: string;
  lessonId: string;
  title: string;
}
export interface Lesson {
  courseId: string;
  lessonId: string;
  title: string;
  difficulty: Difficulty;
  position: number;
  estimatedMinutes: number;
  objectives: string[];
  introduction: string;
  sections: LessonSection[];
  keyTakeaways: string[];
  nextLesson: LessonRef | null;
  generator: Generator;
}
export interface QuizQuestion {
  id: string;
  prompt: string;
  choices: string[];
}
export interface Quiz {
  /** Always "generate": tells a generated quiz from a graded result, as the request's `action` does. */
  action: 'generate';
  quizId: string;
  courseId: string;
  lessonId: string;
  lessonTitle: string;
  questions: QuizQuestion[];
  createdAt: string;
  generator: Generator;
}
export interface GradedAnswer {
  questionId: string;
  /** The choice submitted, or null when the question was left unanswered (it counts as wrong). */
  chosen: number | null;
  correctChoice: number;
  correct: boolean;
  explanation: string;
}
export interface QuizResult {
  /** Always "grade": tells a graded result from a generated quiz, as the request's `action` does. */
  action: 'grade';
  quizId: string;
  courseId: string;
  lessonId: string;
  attempt: number;
  score: number;
  total: number;
  percent: number;
  passed: boolean;
  results: GradedAnswer[];
  gradedAt: string;
}
export interface Exercise {
  courseId: string;
  lessonId: string;
  lessonTitle: string;
  title: string;
  language: 'typescript';
  challenge: string;
  requirements: string[];
  starterCode: string;
  solution: string;
  hints: string[];
  generator: Generator;
}
export interface Citation {
  courseId: string;
  lessonId: string;
  lessonTitle: string;
  section: string;
  score: number;
  excerpt: string;
}
export interface TutorAnswer {
  question: string;
  answer: string;
  citations: Citation[];
  confidence: number;
  generator: Generator;
}

const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be a lowercase slug such as "tool-use"');
// Type-only: the same slug check at run time, the CourseId hint in the SDK.
const CourseSlug = Slug as z.ZodType<CourseId, z.ZodStringDef, CourseId>;
const DifficultySchema = named('Difficulty', z.enum(['beginner', 'intermediate', 'advanced']));

const LessonPreviewSchema: z.ZodType<LessonPreview> = named(
  'LessonPreview',
  z.object({
    id: z.string(),
    position: z.number().int().describe('1-based position in the course'),
    title: z.string(),
    preview: z.string(),
    estimatedMinutes: z.number().int(),
  }),
);
const LessonOutlineSchema: z.ZodType<LessonOutline> = named(
  'LessonOutline',
  z.object({
    id: z.string(),
    position: z.number().int(),
    title: z.string(),
    preview: z.string(),
    estimatedMinutes: z.number().int(),
    objectives: z.array(z.string()),
  }),
);
const courseFields = {
  id: z.string(),
  title: z.string(),
  description: z.string(),
  difficulty: DifficultySchema,
  prerequisites: z.array(z.string()).describe('ids of courses worth taking first'),
  lessonCount: z.number().int(),
  estimatedMinutes: z.number().int().describe('sum of the lessons’ estimates'),
};
const CourseSummarySchema: z.ZodType<CourseSummary> = named(
  'CourseSummary',
  z.object({ ...courseFields, lessons: z.array(LessonPreviewSchema) }),
);
const CourseDetailSchema: z.ZodType<CourseDetail> = named(
  'CourseDetail',
  z.object({ ...courseFields, lessons: z.array(LessonOutlineSchema) }),
);
const CatalogSchema: z.ZodType<Catalog> = named(
  'Catalog',
  z.object({
    courses: z.array(CourseSummarySchema),
    totalCourses: z.number().int(),
    totalLessons: z.number().int(),
  }),
);
const CodeExampleSchema: z.ZodType<CodeExample> = named(
  'CodeExample',
  z.object({
    language: z.enum(['typescript', 'bash', 'json']),
    caption: z.string(),
    source: z.string(),
  }),
);
const LessonSchema: z.ZodType<Lesson> = named(
  'Lesson',
  z.object({
    courseId: z.string(),
    lessonId: z.string(),
    title: z.string(),
    difficulty: DifficultySchema,
    position: z.number().int(),
    estimatedMinutes: z.number().int(),
    objectives: z.array(z.string()),
    introduction: z.string(),
    sections: z.array(z.object({ heading: z.string(), explanation: z.string(), code: CodeExampleSchema.optional() })),
    keyTakeaways: z.array(z.string()),
    nextLesson: z.object({ courseId: z.string(), lessonId: z.string(), title: z.string() }).nullable(),
    generator: Generator,
  }),
);
const QuizSchema: z.ZodType<Quiz> = named(
  'Quiz',
  z.object({
    action: z.literal('generate').describe("the request's action, so a generated quiz narrows from a graded result"),
    quizId: z.string(),
    courseId: z.string(),
    lessonId: z.string(),
    lessonTitle: z.string(),
    questions: z.array(z.object({ id: z.string(), prompt: z.string(), choices: z.array(z.string()) })),
    createdAt: Timestamp,
    generator: Generator,
  }),
);
const QuizResultSchema: z.ZodType<QuizResult> = named(
  'QuizResult',
  z.object({
    action: z.literal('grade').describe("the request's action, so a graded result narrows from a generated quiz"),
    quizId: z.string(),
    courseId: z.string(),
    lessonId: z.string(),
    attempt: z.number().int().describe('1 for the first graded submission of this quiz, then 2, 3, …'),
    score: z.number().int(),
    total: z.number().int(),
    percent: z.number().int().describe('score / total, rounded to a whole percent'),
    passed: z.boolean().describe('true at 70 percent or more'),
    results: z.array(
      z.object({
        questionId: z.string(),
        chosen: z.number().int().nullable().describe('the choice submitted; null when unanswered'),
        correctChoice: z.number().int(),
        correct: z.boolean(),
        explanation: z.string(),
      }),
    ),
    gradedAt: Timestamp,
  }),
);
const ExerciseSchema: z.ZodType<Exercise> = named(
  'Exercise',
  z.object({
    courseId: z.string(),
    lessonId: z.string(),
    lessonTitle: z.string(),
    title: z.string(),
    language: z.literal('typescript'),
    challenge: z.string(),
    requirements: z.array(z.string()),
    starterCode: z.string(),
    solution: z.string(),
    hints: z.array(z.string()),
    generator: Generator,
  }),
);
const TutorAnswerSchema: z.ZodType<TutorAnswer> = named(
  'TutorAnswer',
  z.object({
    question: z.string(),
    answer: z.string(),
    citations: z.array(
      z.object({
        courseId: z.string(),
        lessonId: z.string(),
        lessonTitle: z.string(),
        section: z.string(),
        score: z.number().describe('relevance of the section to the question (BM25)'),
        excerpt: z.string(),
      }),
    ),
    confidence: z.number().min(0).max(1),
    generator: Generator,
  }),
);

const LessonAddress = z.object({ courseId: CourseSlug, lessonId: Slug }).strict();

const router = c.router({
  catalog: {
    method: 'GET',
    path: '/api/catalog',
    summary: 'All courses with lesson previews',
    description:
      'Every course with its title, description, difficulty level, lesson count and a preview of each lesson.',
    responses: { 200: CatalogSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  course: {
    method: 'GET',
    path: '/api/course/:courseId',
    pathParams: z.object({ courseId: CourseSlug }),
    summary: 'Course detail with lesson list and previews',
    description: 'One course with every lesson’s title, preview, estimated time and learning objectives.',
    responses: { 200: CourseDetailSchema, 404: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: { params: { courseId: 'tool-use' } } } satisfies RouteMeta,
  },
  lesson: {
    method: 'POST',
    path: '/api/lesson',
    body: LessonAddress.extend({
      focus: z
        .string()
        .min(3)
        .max(300)
        .optional()
        .describe('a topic to put first: the sections most relevant to it lead'),
    }).strict(),
    summary: 'Full AI-generated lesson',
    description:
      'The complete lesson: an introduction, sections with explanations and code examples, key takeaways and the next lesson. ' +
      'With `focus`, the sections most relevant to that topic come first.',
    responses: { 200: LessonSchema, 404: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.05'),
      example: { body: { courseId: 'tool-use', lessonId: 'function-calling' } },
    } satisfies RouteMeta,
  },
  quiz: {
    method: 'POST',
    path: '/api/quiz',
    body: z.discriminatedUnion('action', [
      LessonAddress.extend({
        action: z.literal('generate'),
        questionCount: z.number().int().min(3).max(10).default(5).describe('how many questions, 3 to 10'),
      }).strict(),
      z
        .object({
          action: z.literal('grade'),
          quizId: z.string().regex(/^quiz_[A-Za-z0-9]{16,40}$/, 'must be a quiz id returned by action "generate"'),
          answers: z
            .array(z.object({ questionId: z.string().min(1).max(64), choice: z.number().int().min(0).max(9) }).strict())
            .min(1)
            .max(10),
        })
        .strict(),
    ]),
    summary: 'Interactive quiz on a lesson: questions generated, answers graded',
    description:
      'Two steps on one route. `action: "generate"` generates a quiz for a lesson and stores it: you get a quizId ' +
      'and questions with choices but no answers. `action: "grade"` grades your answers to a quiz already bought ' +
      "and explains each one; you may submit several attempts. Each answer carries the request's `action`, so a " +
      'client tells a Quiz from a QuizResult by it.',
    responses: {
      200: z.union([QuizSchema, QuizResultSchema]),
      404: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: tiered([
        { id: 'generate', usd: '0.03', description: 'generate a quiz for a lesson' },
        { id: 'grade', usd: '0', description: 'grade answers to a quiz you generated' },
      ]),
      example: { body: { action: 'generate', courseId: 'memory', lessonId: 'context-windows', questionCount: 5 } },
    } satisfies RouteMeta,
  },
  exercise: {
    method: 'POST',
    path: '/api/exercise',
    body: LessonAddress,
    summary: 'Coding exercise for a lesson',
    description:
      'A TypeScript challenge for the lesson: requirements, starter code with TODOs, hints and a working solution.',
    responses: { 200: ExerciseSchema, 404: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.05'),
      example: { body: { courseId: 'rag', lessonId: 'chunking' } },
    } satisfies RouteMeta,
  },
  tutor: {
    method: 'POST',
    path: '/api/tutor',
    body: z
      .object({
        question: z.string().trim().min(3).max(2000).describe('one question about building agents'),
        courseId: CourseSlug.optional().describe('restrict the answer to one course'),
      })
      .strict(),
    summary: 'AI tutor answers one question about building agents',
    description:
      'Answers one question from the course material: lesson sections are ranked against the question with BM25 and the ' +
      'answer cites the lessons it used. A question the material does not cover gets 422 question_out_of_scope and is not ' +
      'charged.',
    responses: { 200: TutorAnswerSchema, 404: ErrorEnvelope, 422: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.03'),
      example: { body: { question: 'How do I stop an agent loop that never finishes?' } },
    } satisfies RouteMeta,
  },
});

export const education = defineService({
  id: 'education',
  title: 'Education Service',
  description:
    'Courses on building agents (foundations, tool use, memory, multi-agent systems, retrieval-augmented generation, ' +
    'deployment) with AI-generated lessons, quizzes, exercises and an AI tutor.',
  router,
});
