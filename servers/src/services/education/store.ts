import { sql, type Kysely, type Migration } from 'kysely';
import { json } from '../../db/camel-case';
import type { Generator } from '@agent-economy/contracts';
import { conflict } from '../../runtime/errors';
import type { StoredQuestion } from './domain';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_quizzes': {
    async up(db) {
      await db.schema
        .createTable('education_quizzes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('course_id', 'text', (c) => c.notNull())
        .addColumn('lesson_id', 'text', (c) => c.notNull())
        .addColumn('questions', 'jsonb', (c) => c.notNull())
        .addColumn('generator', 'jsonb', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('education_quiz_attempts')
        .addColumn('quiz_id', 'text', (c) => c.notNull().references('education_quizzes.id'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('answers', 'jsonb', (c) => c.notNull())
        .addColumn('score', 'integer', (c) => c.notNull())
        .addColumn('total', 'integer', (c) => c.notNull())
        .addColumn('graded_at', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('education_quiz_attempts_pk', ['quiz_id', 'attempt'])
        .execute();
    },
  },
};

interface QuizRow {
  id: string;
  course_id: string;
  lesson_id: string;
  questions: StoredQuestion[];
  generator: Generator;
  created_at: Date;
}

interface AttemptRow {
  quiz_id: string;
  attempt: number;
  answers: unknown;
  score: number;
  total: number;
  graded_at: Date;
}

interface Tables {
  education_quizzes: QuizRow;
  education_quiz_attempts: AttemptRow;
}

export interface StoredQuiz {
  id: string;
  courseId: string;
  lessonId: string;
  questions: StoredQuestion[];
  generator: Generator;
  createdAt: Date;
}

export function educationStore(database: SharedDb) {
  const db = database as Kysely<Tables>;
  return {
    async saveQuiz(quiz: StoredQuiz): Promise<void> {
      await db
        .insertInto('education_quizzes')
        .values({
          id: quiz.id,
          course_id: quiz.courseId,
          lesson_id: quiz.lessonId,
          questions: json(quiz.questions),
          generator: json(quiz.generator),
          created_at: quiz.createdAt,
        })
        .execute();
    },

    async findQuiz(id: string): Promise<StoredQuiz | undefined> {
      const row = await db.selectFrom('education_quizzes').selectAll().where('id', '=', id).executeTakeFirst();
      return (
        row && {
          id: row.id,
          courseId: row.course_id,
          lessonId: row.lesson_id,
          questions: row.questions,
          generator: row.generator,
          createdAt: row.created_at,
        }
      );
    },

    /** Records a graded attempt as the quiz's next attempt number; two at once for one quiz is a 409. */
    async recordAttempt(attempt: Omit<AttemptRow, 'attempt'>): Promise<number> {
      return db.transaction().execute(async (tx) => {
        const { last } = await tx
          .selectFrom('education_quiz_attempts')
          .select((eb) => eb.fn.max('attempt').as('last'))
          .where('quiz_id', '=', attempt.quiz_id)
          .executeTakeFirstOrThrow();
        const number = (last ?? 0) + 1;
        const inserted = await tx
          .insertInto('education_quiz_attempts')
          .values({ ...attempt, attempt: number, answers: json(attempt.answers) })
          .onConflict((oc) => oc.doNothing())
          .executeTakeFirst();
        if (!inserted.numInsertedOrUpdatedRows)
          throw conflict(
            'concurrent_attempt',
            'Another attempt on this quiz was graded at the same moment; submit again',
          );
        return number;
      });
    },

    async attemptCount(quizId: string): Promise<number> {
      const { n } = await db
        .selectFrom('education_quiz_attempts')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('quiz_id', '=', quizId)
        .executeTakeFirstOrThrow();
      return Number(n);
    },
  };
}

export type EducationStore = ReturnType<typeof educationStore>;
