// A tour of the education service through the SDK: browse the catalog and one course (free), then see
// what a lesson costs from its x402 quote. Run `npm start` in another terminal, then `npm run example:tour`.
import { ConnectionError, PaymentRequiredError, atomicToUsd, createClient } from '@agent-economy/sdk';

const client = createClient();

async function main() {
  const catalog = await client.education.catalog();
  console.log(`${catalog.totalCourses} courses, ${catalog.totalLessons} lessons:\n`);
  for (const course of catalog.courses) {
    console.log(
      `  ${course.id.padEnd(20)} ${course.title} (${course.difficulty}, ${course.lessonCount} lessons, ~${course.estimatedMinutes} min)`,
    );
  }

  const course = await client.education.course({ params: { courseId: 'tool-use' } });
  console.log(`\n${course.title}: ${course.description}\n`);
  for (const lesson of course.lessons) {
    console.log(`  ${lesson.position}. ${lesson.title} — ${lesson.preview}`);
  }

  const first = course.lessons[0]!;
  try {
    await client.education.lesson({ body: { courseId: course.id, lessonId: first.id } });
  } catch (error) {
    if (!(error instanceof PaymentRequiredError) || !error.quote) throw error;
    const [offer] = error.quote.accepts;
    console.log(
      `\nThe full lesson "${first.title}" costs ${atomicToUsd(BigInt(offer!.amount))} USD: ${offer!.amount} atomic units of ${offer!.asset}`,
    );
    console.log(
      `paid to ${offer!.payTo} on ${offer!.network} (x402 ${offer!.scheme}, quote valid ${offer!.maxTimeoutSeconds} s).`,
    );
  }
}

main().catch((error) => {
  if (error instanceof ConnectionError)
    console.error('The education service does not answer. Start the economy first: npm start');
  else console.error(error);
  process.exit(1);
});
