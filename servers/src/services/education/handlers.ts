import { randomBytes } from 'node:crypto';
import { education, type Lesson } from '@agent-economy/contracts';
import type { Reasoner } from '../../ai';
import { staticBody, type RouterImplementation } from '../../runtime/app';
import { notFound } from '../../runtime/errors';
import type { CourseMaterial } from './curriculum';
import {
  assembleLesson,
  buildCatalog,
  courseDetail,
  exerciseTask,
  findCourse,
  gradeAnswers,
  lessonTask,
  locateLesson,
  quizTask,
  toStoredQuestions,
  tutorConfidence,
  tutorTask,
  TutorIndex,
} from './domain';
import type { EducationStore } from './store';

/** Lessons of a deterministic engine kept composed; more than the whole curriculum, without focus, many times over. */
const LESSON_CACHE = 512;

export interface EducationDeps {
  courses: readonly CourseMaterial[];
  tutorIndex: TutorIndex;
  store: EducationStore;
  reasoner: Reasoner;
}

// Handlers only translate between the contract and the domain.
export function educationHandlers({
  courses,
  tutorIndex,
  store,
  reasoner,
}: EducationDeps): RouterImplementation<typeof education.router> {
  // Built once and served as is: serialized once too (staticBody).
  const catalog = staticBody(buildCatalog(courses));
  // A deterministic engine's lesson depends on its address and focus alone: composed and serialized once (staticBody),
  // as the catalog is, for the most recently asked LESSON_CACHE of them. An LLM's is written afresh each time.
  const lessons = new Map<string, Lesson>();

  return {
    catalog: async () => ({ status: 200, body: catalog }),

    course: async ({ params }) => ({ status: 200, body: courseDetail(courses, params.courseId) }),

    lesson: async ({ body }) => {
      const location = locateLesson(courses, body.courseId, body.lessonId);
      const key = reasoner.deterministic ? JSON.stringify([body.courseId, body.lessonId, body.focus]) : undefined;
      let lesson = key === undefined ? undefined : lessons.get(key);
      if (!lesson) {
        const { output, generator } = await reasoner.run(lessonTask(location, body.focus));
        lesson = assembleLesson(location, output, generator);
        if (key === undefined) return { status: 200, body: lesson };
        if (lessons.size >= LESSON_CACHE) lessons.delete(lessons.keys().next().value!);
        lesson = staticBody(lesson);
      }
      // Asked last, let go last.
      lessons.delete(key!);
      lessons.set(key!, lesson);
      return { status: 200, body: lesson };
    },

    quiz: async ({ body }) => {
      if (body.action === 'generate') {
        const location = locateLesson(courses, body.courseId, body.lessonId);
        const quizId = `quiz_${randomBytes(12).toString('hex')}`;
        const { output, generator } = await reasoner.run(quizTask(location, body.questionCount, quizId));
        const questions = toStoredQuestions(output);
        const createdAt = new Date();
        await store.saveQuiz({
          id: quizId,
          courseId: location.course.id,
          lessonId: location.lesson.id,
          questions,
          generator,
          createdAt,
        });
        return {
          status: 200,
          body: {
            action: 'generate' as const,
            quizId,
            courseId: location.course.id,
            lessonId: location.lesson.id,
            lessonTitle: location.lesson.title,
            questions: questions.map(({ id, prompt, choices }) => ({ id, prompt, choices })),
            createdAt: createdAt.toISOString(),
            generator,
          },
        };
      }
      const quiz = await store.findQuiz(body.quizId);
      if (!quiz) throw notFound('quiz_not_found', `No quiz "${body.quizId}"`);
      const grade = gradeAnswers(quiz.questions, body.answers);
      const gradedAt = new Date();
      const attempt = await store.recordAttempt({
        quiz_id: quiz.id,
        answers: body.answers,
        score: grade.score,
        total: grade.total,
        graded_at: gradedAt,
      });
      return {
        status: 200,
        body: {
          action: 'grade' as const,
          quizId: quiz.id,
          courseId: quiz.courseId,
          lessonId: quiz.lessonId,
          attempt,
          ...grade,
          gradedAt: gradedAt.toISOString(),
        },
      };
    },

    exercise: async ({ body }) => {
      const location = locateLesson(courses, body.courseId, body.lessonId);
      const { output, generator } = await reasoner.run(exerciseTask(location));
      return {
        status: 200,
        body: {
          courseId: location.course.id,
          lessonId: location.lesson.id,
          lessonTitle: location.lesson.title,
          language: 'typescript' as const,
          ...output,
          generator,
        },
      };
    },

    tutor: async ({ body }) => {
      if (body.courseId) findCourse(courses, body.courseId);
      const passages = tutorIndex.retrieve(body.question, body.courseId);
      const { output, generator } = await reasoner.run(tutorTask(body.question, passages));
      const cited = [...new Set(output.used)].filter((i) => i < passages.length);
      return {
        status: 200,
        body: {
          question: body.question,
          answer: output.answer,
          citations: cited.map((i, n) => {
            const p = passages[i]!;
            return {
              courseId: p.courseId,
              lessonId: p.lessonId,
              lessonTitle: p.lessonTitle,
              section: p.heading,
              score: p.score,
              excerpt: output.excerpts[n] ?? '',
            };
          }),
          confidence: tutorConfidence(
            body.question,
            cited.map((i) => passages[i]!),
          ),
          generator,
        },
      };
    },
  };
}
