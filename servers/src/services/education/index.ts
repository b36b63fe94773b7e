import { education } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { curriculum } from './curriculum';
import { findCourse, locateLesson, TutorIndex } from './domain';
import { educationHandlers } from './handlers';
import { educationStore, migrations } from './store';

export async function createEducationApp(context: ServiceContext) {
  await migrate(context.db, 'education', migrations);
  const tutorIndex = new TutorIndex(curriculum);
  const lessonExists = ({ body }: { body: { courseId: string; lessonId: string } }) =>
    void locateLesson(curriculum, body.courseId, body.lessonId);
  return await createServiceApp({
    service: education,
    handlers: educationHandlers({
      courses: curriculum,
      tutorIndex,
      store: educationStore(context.db),
      reasoner: context.reasoner,
    }),
    ...fromContext(context),
    // Generating a quiz is the paid act; grading answers to a quiz already bought is free.
    pricing: { quiz: ({ body }) => ({ tier: body.action }) },
    // Unknown lessons and questions the material does not cover fail before the 402, not after payment.
    preflight: {
      lesson: lessonExists,
      exercise: lessonExists,
      quiz: ({ body }) => {
        if (body.action === 'generate') lessonExists({ body });
      },
      tutor: ({ body }) => {
        if (body.courseId) findCourse(curriculum, body.courseId);
        tutorIndex.retrieve(body.question, body.courseId);
      },
    },
  });
}
