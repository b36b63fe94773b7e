// The education service's source material. Lessons, quizzes, exercises and tutor answers are all
// composed from these records by the reasoning engine, so every fact the service teaches lives here.

export type Difficulty = 'beginner' | 'intermediate' | 'advanced';

export interface CodeExample {
  language: 'typescript' | 'bash' | 'json';
  /** One sentence saying what the code shows. */
  caption: string;
  source: string;
}

export interface LessonSection {
  heading: string;
  /** Explanation in plain prose; paragraphs separated by a blank line. */
  body: string;
  code?: CodeExample;
}

export interface QuestionMaterial {
  prompt: string;
  correct: string;
  /** Exactly three plausible wrong answers. */
  distractors: [string, string, string];
  /** Why the correct answer is right (shown after grading). */
  explanation: string;
}

export interface ExerciseMaterial {
  title: string;
  challenge: string;
  requirements: string[];
  starterCode: string;
  solution: string;
  hints: string[];
}

export interface LessonMaterial {
  /** Slug, unique within the course, e.g. 'agent-loop'. */
  id: string;
  title: string;
  /** One or two sentences shown in the catalog. */
  preview: string;
  estimatedMinutes: number;
  objectives: string[];
  sections: LessonSection[];
  keyTakeaways: string[];
  questions: QuestionMaterial[];
  exercise: ExerciseMaterial;
}

export interface CourseMaterial {
  id: string;
  title: string;
  description: string;
  difficulty: Difficulty;
  /** Ids of courses worth taking first. */
  prerequisites: string[];
  lessons: LessonMaterial[];
}
